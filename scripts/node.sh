# Sourced by the project's scripts (test, demo, bench, .ci/run): run on a
# supported Node.js. When the system's node is older than NODE_MIN_MAJOR, the
# pinned Node.js (.node-version, the one place it is pinned) is brought into
# .tools/node from the npm registry's official binaries (the package
# node-<platform>-<arch>, fetched and integrity-checked by npm itself) and put
# first on PATH, so node, npm and npx all run on it.
# usage: use_supported_node   (from the project root)
NODE_MIN_MAJOR=22

node_major() { "${1:-node}" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

use_supported_node() {
  local pinned tools dir
  pinned=$(tr -d ' \n\r' < .node-version)
  tools="$PWD/.tools"
  dir="$tools/node-v$pinned"
  # A node already on PATH that is new enough is used as it is (the system's, or .tools/node from an outer script).
  if [ "$(node_major)" -ge "$NODE_MIN_MAJOR" ]; then return 0; fi
  if [ "$(node_major "$dir/bin/node")" -lt "$NODE_MIN_MAJOR" ]; then
    local os arch tmp
    os=$(uname -s | tr '[:upper:]' '[:lower:]')
    case "$(uname -m)" in x86_64) arch=x64 ;; aarch64|arm64) arch=arm64 ;; *) arch=$(uname -m) ;; esac
    command -v npm >/dev/null 2>&1 || { echo "lockaudit: Node.js >= $NODE_MIN_MAJOR is needed and npm is missing to fetch it; install Node.js $pinned" >&2; return 1; }
    echo "lockaudit: node $(node --version 2>/dev/null || echo '(none)') is older than $NODE_MIN_MAJOR; fetching Node.js $pinned (node-$os-$arch from the npm registry) into .tools (first time only)…" >&2
    mkdir -p "$tools"
    # Unpacked beside its final place, then renamed: another worktree sharing .tools never sees half a node.
    tmp=$(mktemp -d "$tools/.node-v$pinned.XXXXXX") && chmod 755 "$tmp"
    if ! (cd "$tmp" && npm pack --silent "node-$os-$arch@$pinned" >/dev/null && tar xzf "node-$os-$arch-$pinned.tgz" --strip-components=1 && rm "node-$os-$arch-$pinned.tgz"); then
      rm -rf "$tmp"
      echo "lockaudit: could not fetch node-$os-$arch@$pinned from the npm registry; install Node.js $pinned (or any >= $NODE_MIN_MAJOR) yourself" >&2
      return 1
    fi
    mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"   # lost a race to another script: theirs is the same version
  fi
  # .tools/node points at the pinned version for people; PATH names the version itself, so a worktree
  # pinned differently (sharing .tools) cannot swap this run's node under it.
  ln -sfn "node-v$pinned" "$tools/node"
  export PATH="$dir/bin:$PATH"
  [ "$(node_major)" -ge "$NODE_MIN_MAJOR" ] || { echo "lockaudit: $dir/bin/node does not run" >&2; return 1; }
}
