// Builds the web console into dist/ui, which api/routes/ui.ts serves at /ui/.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  // Assets are referenced under the prefix the API serves them at.
  base: '/ui/',
  build: {
    outDir: fileURLToPath(new URL('../dist/ui', import.meta.url)),
    emptyOutDir: true,
    // One bundle of ~650 kB (ECharts is most of it, ~215 kB gzipped), served
    // from the API itself and cached by the browser: splitting buys nothing here.
    chunkSizeWarningLimit: 800,
  },
});
