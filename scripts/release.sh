#!/usr/bin/env bash
# release.sh: build the crypt4gh binaries of a release.
#
# Run from anywhere in the repository:   scripts/release.sh
#
# Builds the command for linux, darwin and windows on amd64 and arm64,
# pure Go and static (CGO_ENABLED=0), with the flags that README gives:
# -trimpath (no paths of this machine in the binary), -ldflags "-s -w" (no
# symbol table or debug information) and the tag urfave_cli_no_docs (none
# of urfave/cli's Markdown and man page generators, which nothing calls).
# The version is that of `git describe --tags --always --dirty`, and the
# commit that of `git rev-parse HEAD` (modified when describe says dirty):
# both are stamped into the binary with -X, which `crypt4gh --version`
# prints. (The go command's own stamp, -buildvcs, is off: it finds no
# repository in a git worktree, or the wrong one when the worktree is
# inside another checkout.) The binaries go to
# dist/VERSION/ (DIST=DIR for another folder), as
# crypt4gh-VERSION-OS-ARCH (.exe for windows), with a SHA256SUMS file that
# `sha256sum -c SHA256SUMS` checks. PLATFORMS="linux/amd64 …" builds only
# those. An existing folder for the version is replaced.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

version=$(git describe --tags --always --dirty)
commit=$(git rev-parse HEAD)
modified=false
[[ $version == *-dirty ]] && modified=true
stamps="-X github.com/c4gh-go/crypt4gh/internal/cli.stampedVersion=$version"
stamps+=" -X github.com/c4gh-go/crypt4gh/internal/cli.stampedCommit=$commit"
stamps+=" -X github.com/c4gh-go/crypt4gh/internal/cli.stampedModified=$modified"
platforms=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}
dist=${DIST:-$root/dist/$version}

rm -rf "$dist"
mkdir -p "$dist"
for target in $platforms; do
	os=${target%/*} arch=${target#*/}
	name=crypt4gh-$version-$os-$arch
	[[ $os == windows ]] && name=$name.exe
	echo "building $name" >&2
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -buildvcs=false -trimpath -tags urfave_cli_no_docs \
		-ldflags="-s -w $stamps" -o "$dist/$name" .
done
(cd "$dist" && sha256sum -- crypt4gh-* >SHA256SUMS)
echo "$dist:" >&2
(cd "$dist" && ls -l crypt4gh-* SHA256SUMS) >&2
