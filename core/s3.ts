// The S3/MinIO client for the configured endpoint. Callers own it (no singleton).
import { Client } from 'minio';
import type { Config } from './config.js';

export function createS3Client(s3: Config['s3']): Client {
  const url = new URL(s3.endpoint);
  return new Client({
    endPoint: url.hostname,
    port: url.port ? Number(url.port) : undefined,
    useSSL: url.protocol === 'https:',
    accessKey: s3.accessKey,
    secretKey: s3.secretKey,
    region: s3.region,
    pathStyle: true,
  });
}
