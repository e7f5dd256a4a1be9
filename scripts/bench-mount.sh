#!/usr/bin/env bash
# bench-mount.sh: how fast is a fresh mount, as a user meets it?
#
# Run by hand from anywhere in the repository:   scripts/bench-mount.sh
# (scripts/bench.sh calls it with MOUNT=1).
#
# Needs Go, bash, coreutils, util-linux (mountpoint), FUSE (/dev/fuse, and
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
#               /dev/null, the two taking turns; and the CPU time that
#               each took (the mount's and cat's together, against
#               decrypt's), which other load on the machine changes less
#               than the wall time
#   cold rand   single-threaded 4 KiB preads of the mounted 1 GiB file,
#               each in a 64 KiB segment that no read before it touched
#               (scripts/preads), on a fresh mount: reads per second,
#               against the same reads of the plaintext file in the page
#               cache
#
# and the same two with `mount --direct-io`.
#
# Each figure is the best of RUNS runs (default 5); every run's own
# ratios go to stderr as it ends. With PREV=REV (a git revision) the same
# is measured with the command of that version, in turns with this one,
# and given as a ratio to it. Everything is removed and unmounted on exit.
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
	go build -o "$tmp/preads" ./scripts/preads)
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

# command_of BIN: the command that BIN stands for: "direct" is this
# version's (whose mounts get --direct-io).
command_of() {
	if [[ $1 == direct ]]; then echo "$c4gh"; else echo "$1"; fi
}

# cpu_ms: sets cpu to the user and system CPU time in ms of the children
# of this shell that have ended, from bash's times (run in this shell, not
# in a subshell, whose children are its own).
cpu_ms() {
	local line
	times >"$tmp/times"
	{ read -r _; read -r line; } <"$tmp/times"
	cpu=$(awk -v t="$line" 'BEGIN {
		split(t, f, " "); ms = 0
		for (i = 1; i <= 2; i++) { split(f[i], a, /[ms]/); ms += (a[1] * 60 + a[2]) * 1000 }
		printf "%d", ms }')
}

# mount_start BIN: mounts src at mnt with the command BIN in the
# background, and returns once it is mounted (at most 20 s).
mount_start() {
	local opts=()
	if [[ $1 == direct ]]; then opts=(--direct-io); fi
	"$(command_of "$1")" mount "${opts[@]}" --sk alice.sec src mnt </dev/null >/dev/null 2>mount.log &
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
# mount_cpu: the CPU time in ms that the mount has taken so far.
mount_cpu() {
	local st
	read -r -a st <"/proc/$mount_pid/stat"
	echo $(((st[13] + st[14]) * 1000 / $(getconf CLK_TCK)))
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

# dec_seq BIN: "wall cpu", the wall time in µs and the CPU time in ms of
# decrypt of the 256 MiB file to /dev/null by BIN, the file in the page
# cache.
dec_seq() {
	cat src/seq.c4gh >/dev/null
	local t0 t1 c0 cpu
	cpu_ms
	c0=$cpu
	t0=$(now_us)
	"$(command_of "$1")" decrypt --sk alice.sec -i src/seq.c4gh >/dev/null
	t1=$(now_us)
	cpu_ms
	echo $((t1 - t0)) $((cpu - c0))
}
# cold_seq BIN: "wall cpu", the wall time in µs of the first cat of the
# mounted 256 MiB file on a fresh mount by BIN, the encrypted file in the
# page cache, and the CPU time in ms that the mount and cat took for it.
cold_seq() {
	mount_start "$1"
	cat src/seq.c4gh >/dev/null
	local t0 t1 c0 m0 m1 cpu
	m0=$(mount_cpu)
	cpu_ms
	c0=$cpu
	t0=$(now_us)
	cat mnt/seq >/dev/null
	t1=$(now_us)
	cpu_ms
	m1=$(mount_cpu)
	mount_stop
	echo $((t1 - t0)) $((cpu - c0 + m1 - m0))
}
# cold_rand BIN SEED: cold random 4 KiB reads per second of the mounted
# 1 GiB file on a fresh mount by BIN.
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
declare -A t_dec t_seq r_rand c_dec c_seq
r_plain=0
for ((i = 0; i < RUNS; i++)); do
	for b in "${bins[@]}"; do
		out=$(dec_seq "$b")
		read -r d dc <<<"$out"
		out=$(cold_seq "$b")
		read -r s sc <<<"$out"
		r=$(cold_rand "$b" $((i + 1)))
		t_dec[$b]=$(lesser "${t_dec[$b]:-$d}" "$d")
		t_seq[$b]=$(lesser "${t_seq[$b]:-$s}" "$s")
		c_dec[$b]=$(lesser "${c_dec[$b]:-$dc}" "$dc")
		c_seq[$b]=$(lesser "${c_seq[$b]:-$sc}" "$sc")
		r_rand[$b]=$(greater "${r_rand[$b]:-$r}" "$r")
		name=$b
		case $b in "$c4gh") name=this ;; "$tmp/crypt4gh-prev") name=$PREV ;; direct) name="this --direct-io" ;; esac
		echo "bench-mount: run $((i + 1)), $name: first cat $(ratio "$d" "$s") of decrypt (CPU $(ratio "$sc" "$dc") of decrypt's), $r cold reads/s" >&2
	done
	r_plain=$(greater "$r_plain" "$(plain_rand $((i + 1)))")
done

echo
echo "mount, cold: a fresh mount for each run, the encrypted files in the page cache, the mounted ones not; best of $RUNS"
printf '%-44s %12s %14s   %s\n' "measure" "value" "ratio" "target"
printf '%-44s %12s %14s   %s\n' "decrypt 256 MiB -> /dev/null" "$(secs "${t_dec[$c4gh]}") s" "1" ""
printf '%-44s %12s %14s   %s\n' "fresh mount: first cat of 256 MiB" "$(secs "${t_seq[$c4gh]}") s" "$(ratio "${t_dec[$c4gh]}" "${t_seq[$c4gh]}") of decrypt" ">= 0.80"
printf '%-44s %12s %14s   %s\n' "  CPU: decrypt" "${c_dec[$c4gh]} ms" "1" ""
printf '%-44s %12s %14s   %s\n' "  CPU: mount and cat, first cat" "${c_seq[$c4gh]} ms" "$(ratio "${c_seq[$c4gh]}" "${c_dec[$c4gh]}") × decrypt" ""
printf '%-44s %12s %14s   %s\n' "4 KiB preads, plaintext file in page cache" "${r_plain}/s" "1" ""
printf '%-44s %12s %14s   %s\n' "fresh mount: 4 KiB preads, new segments" "${r_rand[$c4gh]}/s" "$(ratio "${r_rand[$c4gh]}" "$r_plain") of plain" ">= 10000/s"
printf '%-44s %12s %14s   %s\n' "--direct-io: decrypt 256 MiB, its turn" "$(secs "${t_dec[direct]}") s" "1" ""
printf '%-44s %12s %14s   %s\n' "--direct-io: first cat of 256 MiB" "$(secs "${t_seq[direct]}") s" "$(ratio "${t_dec[direct]}" "${t_seq[direct]}") of decrypt" ">= 0.80"
printf '%-44s %12s %14s   %s\n' "  CPU: mount and cat, first cat" "${c_seq[direct]} ms" "$(ratio "${c_seq[direct]}" "${c_dec[direct]}") × decrypt" ""
printf '%-44s %12s %14s   %s\n' "--direct-io: 4 KiB preads, new segments" "${r_rand[direct]}/s" "$(ratio "${r_rand[direct]}" "$r_plain") of plain" ">= 10000/s"

if [[ -n $PREV ]]; then
	p=$tmp/crypt4gh-prev
	echo
	echo "this version against $PREV ($(git -C "$root" rev-parse --short "$PREV")), same run, in turns"
	printf '%-44s %12s %12s %10s\n' "measure" "this" "previous" "ratio"
	printf '%-44s %10s s %10s s %10s\n' "decrypt 256 MiB (time / previous)" "$(secs "${t_dec[$c4gh]}")" "$(secs "${t_dec[$p]}")" "$(ratio "${t_dec[$c4gh]}" "${t_dec[$p]}")"
	printf '%-44s %10s s %10s s %10s\n' "cold seq: first cat (time / previous)" "$(secs "${t_seq[$c4gh]}")" "$(secs "${t_seq[$p]}")" "$(ratio "${t_seq[$c4gh]}" "${t_seq[$p]}")"
	printf '%-44s %12s %12s %10s\n' "cold seq: of decrypt" "$(ratio "${t_dec[$c4gh]}" "${t_seq[$c4gh]}")" "$(ratio "${t_dec[$p]}" "${t_seq[$p]}")" ""
	printf '%-44s %10s ms %10s ms %10s\n' "cold seq: CPU of mount and cat" "${c_seq[$c4gh]}" "${c_seq[$p]}" "$(ratio "${c_seq[$c4gh]}" "${c_seq[$p]}")"
	printf '%-44s %10s/s %10s/s %10s\n' "cold rand: reads/s (rate / previous)" "${r_rand[$c4gh]}" "${r_rand[$p]}" "$(ratio "${r_rand[$c4gh]}" "${r_rand[$p]}")"
fi
