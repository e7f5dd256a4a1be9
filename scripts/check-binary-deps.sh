#!/usr/bin/env bash
# check-binary-deps.sh: fail when the crypt4gh command links a module that
# only the tests may use, or one that the release build tag leaves out.
#
# Run from anywhere in the repository (CI runs it from .ci/run):
#
#   scripts/check-binary-deps.sh
#
# It builds the command at the repository root the way a release is built
# (CGO_ENABLED=0, -trimpath, -s -w, the tag urfave_cli_no_docs: see
# scripts/release.sh) into a temporary file and reads the modules it links
# with `go version -m`. The differential tests of internal/difftest import
# github.com/neicnordic/crypt4gh, and through it github.com/dchest/bcrypt_pbkdf;
# its command-line dependencies github.com/jessevdk/go-flags and
# github.com/logrusorgru/aurora would come with its main package. None of
# them may reach the binary, nor the Markdown and man page generators of
# urfave/cli (github.com/russross/blackfriday, github.com/cpuguy83/go-md2man),
# which the tag leaves out: nothing calls them, and their initialisation
# slowed every start.
#
# It also checks that package mount links no store: the S3 source of a
# mount is in mount/storesource, so that mount imports neither objstore
# nor the AWS SDK.
#
# With an argument, it checks that binary instead of building one (used to
# test the check itself on a binary that does link them).
set -euo pipefail

forbidden='neicnordic|dchest|go-flags|aurora|blackfriday|go-md2man'

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ $# -gt 0 ]; then
	bin=$1
else
	bin=$tmp/crypt4gh
	(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -tags urfave_cli_no_docs -o "$bin" .)
fi

if ! go version -m "$bin" >"$tmp/modules"; then
	echo "check-binary-deps: go version -m failed on $bin" >&2
	exit 1
fi
# go version -m lists the main module as "mod" and every linked module
# as "dep" (or "=>" for a replacement).
if ! grep -Eq '^[[:space:]]+mod[[:space:]]' "$tmp/modules"; then
	echo "check-binary-deps: $bin carries no module information" >&2
	exit 1
fi
if grep -E '^[[:space:]]+(dep|=>)[[:space:]]' "$tmp/modules" | grep -E "$forbidden" >"$tmp/bad"; then
	echo "check-binary-deps: $bin links modules it must not (test-only, or left out by the build tag):" >&2
	cat "$tmp/bad" >&2
	exit 1
fi
if (cd "$root" && go list -deps ./mount) | grep -E '^(github\.com/aws/|github\.com/c4gh-go/crypt4gh/objstore$)' >"$tmp/bad"; then
	echo "check-binary-deps: package mount imports a store:" >&2
	cat "$tmp/bad" >&2
	exit 1
fi
echo "check-binary-deps: ok, $(grep -cE '^[[:space:]]+dep[[:space:]]' "$tmp/modules") modules linked, none of $forbidden; mount links no store"
