# Shared by the scripts that compare two poolc binaries (old_vs_new.sh,
# primitives.sh); source it from the repository root.
# binary ARG: ARG itself when it is an executable file, else the release build of the
# commit ARG names (`2b9c683`, `HEAD`), built once in a worktree beside this one
# (target/bench-worktrees/COMMIT, its own target directory) and then reused; prints
# the binary's path, or says why not and fails.
binary() {
  if [ -x "$1" ] && [ -f "$1" ]; then echo "$1"; return; fi
  local commit
  commit=$(git rev-parse --verify --quiet --short=12 "$1^{commit}") ||
    { echo "$1: neither a poolc binary nor a commit" >&2; return 1; }
  local dir="$root/target/bench-worktrees/$commit"
  if [ ! -x "$dir/target/release/poolc" ]; then
    [ -d "$dir" ] || git worktree add --detach -f "$dir" "$commit" >&2 || return 1
    (cd "$dir" && cargo build --release --quiet --bin poolc >&2) ||
      { echo "$1: the build failed" >&2; return 1; }
  fi
  echo "$dir/target/release/poolc"
}
# median: the middle of the numbers on stdin, one a line.
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
