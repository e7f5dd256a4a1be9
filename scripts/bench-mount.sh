#!/usr/bin/env bash
# bench-mount.sh: how fast is a fresh mount, as a user meets it?
#
# Run by hand from anywhere in the repository:   scripts/bench-mount.sh
# (scripts/bench.sh calls it with MOUNT=1).
#
# Needs Go, coreutils, util-linux (mountpoint), FUSE (/dev/fuse, and
# fusermount3 unless root) and 1.5 GiB in $TMPDIR.
#
# It builds the command as a release is built and scripts/preads into a
# temporary folder, makes random files of 256 MiB and 1 GiB there, and
# mounts their folder with `crypt4gh mount` afresh for every measurement,
# so that the kernel's page cache holds nothing of the mounted files while
# the encrypted files are in it (read just before), and prints every
# figure as a ratio to something measured in the same run:
#
#   cold seq    the first `cat` of the mounted 256 MiB file to /dev/null on
#               a fresh mount, against `crypt4gh decrypt` of it to
#               /dev/null, the two taking turns
#   cold rand   single-threaded 4 KiB preads of the mounted 1 GiB file,
#               each in a 64 KiB segment that no read before it touched
#               (scripts/preads), on a fresh mount: reads per second,
#               against the same reads of the plaintext file in the page
#               cache
#
# and the same two with Options.DirectIO, which the command has no flag for
# yet: mounted by the mount package's test binary (its mounter, the same
# library call as the command's).
#
# Each figure is the best of RUNS runs (default 5). With PREV=REV (a git
# revision) the same is measured with the command of that version, in
# turns with this one, and given as a ratio to it. Everything is removed
# and unmounted on exit.
set -euo pipefail

RUNS=${RUNS:-5}
PREV=${PREV:-}
READS=${READS:-8000}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/c4gh-bench-mount.XXXXXX")
mount_pid=
cleanup() {
	if [[ -n $mount_pid ]]; then kill -TERM "$mount_pid" 2>/dev/null || true; wait "$mount_pid" 2>/dev/null || true; fi
	if mountpoint -q "$tmp/mnt" 2>/dev/null; then umount -l "$tmp/mnt" 2>/dev/null || fusermount3 -u -z "$tmp/mnt" || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp"

echo "bench-mount: building in $tmp ..." >&2
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -tags urfave_cli_no_docs -o "$tmp/crypt4gh" . &&
	go build -o "$tmp/preads" ./scripts/preads &&
	go test -c -o "$tmp/mounter" ./mount)
c4gh=$tmp/crypt4gh
if [[ -n $PREV ]]; then
	echo "bench-mount: building $PREV ..." >&2
	mkdir "$tmp/prevsrc"
	git -C "$root" archive "$PREV" | tar -x -C "$tmp/prevsrc"
	(cd "$tmp/prevsrc" && CGO_ENABLED=0 go build -o "$tmp/crypt4gh-prev" .)
	rm -rf "$tmp/prevsrc"
fi

"$c4gh" keygen --nocrypt --sk alice.sec --pk alice.pub >/dev/null 2>&1
MiB=$((1 << 20))
echo "bench-mount: making random files of 256 MiB and 1 GiB ..." >&2
mkdir src mnt
head -c $((1024 * MiB)) /dev/urandom >plain
head -c $((256 * MiB)) plain >plain256
"$c4gh" encrypt --recipient_pk alice.pub -i plain -o src/big.c4gh
"$c4gh" encrypt --recipient_pk alice.pub -i plain256 -o src/seq.c4gh
sync

now_us() {
	local t=${EPOCHREALTIME/[.,]/}
	echo "$t"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
secs() { awk -v us="$1" 'BEGIN { printf "%.4f", us / 1e6 }'; }
lesser() { awk -v a="$1" -v b="$2" 'BEGIN { print (a < b ? a : b) }'; }
greater() { awk -v a="$1" -v b="$2" 'BEGIN { print (a > b ? a : b) }'; }

# direct: the test mounter with Options.DirectIO, run as a command.
direct() {
	[[ $1 == mount ]] || { echo "bench-mount: direct $1" >&2; exit 2; }
	C4GH_TEST_MOUNTER=1 C4GH_TEST_KEYFILE=alice.sec C4GH_TEST_DIRECTIO=1 \
		C4GH_TEST_SOURCE=src C4GH_TEST_MOUNTPOINT=mnt exec "$tmp/mounter" -test.run='^$'
}

# mount_start BIN: mounts src at mnt with the command BIN in the
# background, and returns once it is mounted (at most 20 s).
mount_start() {
	"$1" mount --sk alice.sec src mnt </dev/null >/dev/null 2>mount.log &
	mount_pid=$!
	local i
	for ((i = 0; i < 400; i++)); do
		if mountpoint -q mnt; then return 0; fi
		if ! kill -0 "$mount_pid" 2>/dev/null; then break; fi
		sleep 0.05
	done
	echo "bench-mount: the mount did not come up:" >&2
	cat mount.log >&2
	exit 1
}
# mount_stop: unmounts, as Ctrl-C does, and waits for the command to end.
mount_stop() {
	kill -TERM "$mount_pid"
	wait "$mount_pid" || true # 128 + SIGTERM
	mount_pid=
	if mountpoint -q mnt; then
		echo "bench-mount: mnt is still mounted" >&2
		exit 1
	fi
}

# dec_seq BIN: the wall time in µs of decrypt of the 256 MiB file to
# /dev/null by BIN (this version's for direct), the file in the page cache.
dec_seq() {
	cat src/seq.c4gh >/dev/null
	local t0 t1 bin=$1
	if [[ $bin == direct ]]; then bin=$c4gh; fi
	t0=$(now_us)
	"$bin" decrypt --sk alice.sec -i src/seq.c4gh >/dev/null
	t1=$(now_us)
	echo $((t1 - t0))
}
# cold_seq BIN: the wall time in µs of the first cat of the mounted
# 256 MiB file on a fresh mount by BIN, the encrypted file in the page
# cache.
cold_seq() {
	mount_start "$1"
	cat src/seq.c4gh >/dev/null
	local t0 t1
	t0=$(now_us)
	cat mnt/seq >/dev/null
	t1=$(now_us)
	mount_stop
	echo $((t1 - t0))
}
# cold_rand BIN: cold random 4 KiB reads per second of the mounted 1 GiB
# file on a fresh mount by BIN.
cold_rand() {
	mount_start "$1"
	cat src/big.c4gh >/dev/null
	"$tmp/preads" -n "$READS" -seed "$2" mnt/big
	mount_stop
}
plain_rand() {
	cat plain >/dev/null
	"$tmp/preads" -n "$READS" -seed "$1" plain
}

# Correctness first: the mount must show the plaintext.
mount_start "$c4gh"
cmp -s mnt/seq plain256 || { echo "bench-mount: the mounted file differs from its plaintext" >&2; exit 1; }
mount_stop

echo "bench-mount: measuring, best of $RUNS ..." >&2
bins=("$c4gh" direct)
if [[ -n $PREV ]]; then bins+=("$tmp/crypt4gh-prev"); fi
declare -A t_dec t_seq r_rand
r_plain=0
for ((i = 0; i < RUNS; i++)); do
	for b in "${bins[@]}"; do
		d=$(dec_seq "$b")
		s=$(cold_seq "$b")
		r=$(cold_rand "$b" $((i + 1)))
		t_dec[$b]=$(lesser "${t_dec[$b]:-$d}" "$d")
		t_seq[$b]=$(lesser "${t_seq[$b]:-$s}" "$s")
		r_rand[$b]=$(greater "${r_rand[$b]:-$r}" "$r")
	done
	r_plain=$(greater "$r_plain" "$(plain_rand $((i + 1)))")
done

echo
echo "mount, cold: a fresh mount for each run, the encrypted files in the page cache, the mounted ones not; best of $RUNS"
printf '%-44s %12s %14s   %s\n' "measure" "value" "ratio" "target"
printf '%-44s %12s %14s   %s\n' "decrypt 256 MiB -> /dev/null" "$(secs "${t_dec[$c4gh]}") s" "1" ""
printf '%-44s %12s %14s   %s\n' "fresh mount: first cat of 256 MiB" "$(secs "${t_seq[$c4gh]}") s" "$(ratio "${t_dec[$c4gh]}" "${t_seq[$c4gh]}") of decrypt" ">= 0.80"
printf '%-44s %12s %14s   %s\n' "4 KiB preads, plaintext file in page cache" "${r_plain}/s" "1" ""
printf '%-44s %12s %14s   %s\n' "fresh mount: 4 KiB preads, new segments" "${r_rand[$c4gh]}/s" "$(ratio "${r_rand[$c4gh]}" "$r_plain") of plain" ">= 10000/s"
printf '%-44s %12s %14s   %s\n' "  DirectIO: decrypt 256 MiB, its turn" "$(secs "${t_dec[direct]}") s" "1" ""
printf '%-44s %12s %14s   %s\n' "  DirectIO: first cat of 256 MiB" "$(secs "${t_seq[direct]}") s" "$(ratio "${t_dec[direct]}" "${t_seq[direct]}") of decrypt" ">= 0.80"
printf '%-44s %12s %14s   %s\n' "  DirectIO: 4 KiB preads, new segments" "${r_rand[direct]}/s" "$(ratio "${r_rand[direct]}" "$r_plain") of plain" ">= 10000/s"

if [[ -n $PREV ]]; then
	p=$tmp/crypt4gh-prev
	echo
	echo "this version against $PREV ($(git -C "$root" rev-parse --short "$PREV")), same run, in turns"
	printf '%-44s %12s %12s %10s\n' "measure" "this" "previous" "ratio"
	printf '%-44s %10s s %10s s %10s\n' "decrypt 256 MiB (time / previous)" "$(secs "${t_dec[$c4gh]}")" "$(secs "${t_dec[$p]}")" "$(ratio "${t_dec[$c4gh]}" "${t_dec[$p]}")"
	printf '%-44s %10s s %10s s %10s\n' "cold seq: first cat (time / previous)" "$(secs "${t_seq[$c4gh]}")" "$(secs "${t_seq[$p]}")" "$(ratio "${t_seq[$c4gh]}" "${t_seq[$p]}")"
	printf '%-44s %12s %12s %10s\n' "cold seq: of decrypt" "$(ratio "${t_dec[$c4gh]}" "${t_seq[$c4gh]}")" "$(ratio "${t_dec[$p]}" "${t_seq[$p]}")" ""
	printf '%-44s %10s/s %10s/s %10s\n' "cold rand: reads/s (rate / previous)" "${r_rand[$c4gh]}" "${r_rand[$p]}" "$(ratio "${r_rand[$c4gh]}" "${r_rand[$p]}")"
fi
