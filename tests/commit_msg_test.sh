#!/bin/sh
# The commit-msg hook (.githooks/commit-msg) takes a 72-character subject and refuses a
# 73-character or empty one, counting characters (not bytes) and skipping comment lines;
# and git, pointed at .githooks by ci/install-hooks.sh, runs it. Usage: commit_msg_test.sh SRC
set -eu
src=${1:?usage: commit_msg_test.sh SOURCE_DIR}
hook=$src/.githooks/commit-msg
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
# n copies of a character, made without the hook's own tools (wc, sed) to count them.
rep() { python3 -c 'import sys; sys.stdout.write(sys.argv[1] * int(sys.argv[2]))' "$1" "$2"; }
check() { # expect (0 accept, 1 refuse), label, message
  printf '%s' "$3" >"$tmp/msg"
  if "$hook" "$tmp/msg" 2>"$tmp/err"; then got=0; else got=1; fi
  if [ "$got" != "$1" ]; then
    echo "FAIL: $2: hook exit $got, want $1"; cat "$tmp/err"; fail=1
  else
    echo "ok: $2"
  fi
}
nl='
'
check 0 "72-character subject" "$(rep a 72)${nl}${nl}body line $(rep b 90)${nl}"
check 1 "73-character subject" "$(rep a 73)${nl}"
check 0 "72 two-byte characters (144 bytes)" "$(rep é 72)${nl}"
check 1 "73 two-byte characters" "$(rep é 73)${nl}"
check 1 "empty message" ""
check 1 "only comments and blank lines" "${nl}# Please enter the commit message${nl}${nl}"
check 0 "comment lines before a short subject" "# a comment $(rep c 80)${nl}Fix it${nl}"
check 1 "blank line then a 73-character subject" "${nl}$(rep a 73)${nl}"

# Through git itself, as ci/install-hooks.sh sets it up.
git init -q "$tmp/repo"
mkdir -p "$tmp/repo/ci" && cp -r "$src/.githooks" "$tmp/repo/" &&
  cp "$src/ci/install-hooks.sh" "$tmp/repo/ci/"
(cd "$tmp/repo" && ci/install-hooks.sh >/dev/null)
g() { git -C "$tmp/repo" -c user.name=t -c user.email=t@t -c commit.gpgsign=false "$@"; }
if g commit -q --allow-empty -m "$(rep a 72)" && ! g commit -q --allow-empty -m "$(rep a 73)" \
  2>/dev/null && [ "$(g rev-list --count HEAD)" = 1 ]; then
  echo "ok: git runs the hook: the 72-character commit is made, the 73 one refused"
else
  echo "FAIL: git with core.hooksPath=.githooks"; fail=1
fi
exit $fail
