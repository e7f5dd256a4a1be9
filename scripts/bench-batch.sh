#!/usr/bin/env bash
# bench-batch.sh: how fast is batch mode, against the single-file command?
#
# Run by hand from anywhere in the repository:   scripts/bench-batch.sh
# (scripts/bench.sh calls it at its end unless BATCH=0).
#
# It builds the command as a release is built into a temporary folder and
# measures, each time the best (least) of RUNS runs (default 3), the page
# cache warm, in one run (the first two rows taking turns):
#
#   1 file     decrypt of one 1,000 MiB file -> file: the single-file figure
#   1,000      batch decrypt of 1,000 files of 1 MiB (the same bytes), one
#              process, -o DIR/, against the single file: target >= 0.80
#   10,000     batch decrypt of 10,000 files of 1 KB, one process: files/s,
#              target >= 1,000/s
#   journal    the same 10,000 again with a finished --journal: no crypto
#              work, the stat of each output; s per 1,000 inputs, target <= 1
#
# With PREV=REV (a git revision, e.g. PREV=main) the same two rows of that
# version (built as it was then) take their turns in the same loop, and its
# ratio is printed beside this one's: a change measured in one run.
#
# Every output is committed as always (fsynced, renamed into place), so the
# small-file rows depend on the disk: TMPDIR=/dev/shm measures the command
# rather than the disk. It takes about a minute on a 2-core machine (two
# with PREV) and 3 GiB in $TMPDIR.
#
# The plaintexts the inputs are made from are made in RAM (/dev/shm, if
# there is one), not deleted on the disk: on ext4 without a journal, the
# inodes deleted in the last minute are skipped one by one whenever a new
# inode is allocated in their group, so that each new file of a batch paid
# for the 11,000 files the set-up deleted (perf, a batch run after 1,000
# were deleted: 14% of its CPU time in ext4's recently_deleted), which one
# file, one inode, hardly pays, nor a batch run into a new folder. For the
# same reason the outputs of a run are not deleted before the next: they
# are emptied (which frees their blocks and page cache, as deleting
# them would) and moved aside, and deleted at the end. Deleted, the 1,000
# outputs of the run before made each batch run scan past them (a tenth
# of its CPU time in one profile). Deletions by other processes in the
# same inode group within the last minute still weigh on a batch.
set -euo pipefail

RUNS=${RUNS:-3}
PREV=${PREV:-}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/c4gh-bench-batch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

echo "building in $tmp ..." >&2
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -tags urfave_cli_no_docs -o "$tmp/crypt4gh" .)
c4gh=$tmp/crypt4gh
if [[ -n $PREV ]]; then
	echo "building $PREV ..." >&2
	mkdir "$tmp/prevsrc"
	git -C "$root" archive "$PREV" | tar -x -C "$tmp/prevsrc"
	(cd "$tmp/prevsrc" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -tags urfave_cli_no_docs -o "$tmp/crypt4gh-prev" .)
	rm -rf "$tmp/prevsrc"
fi
"$c4gh" keygen --nocrypt --sk alice.sec --pk alice.pub >/dev/null 2>&1

MiB=$((1 << 20))
echo "making 1,000 MiB in one file and in 1,000 of 1 MiB, and 10,000 files of 1 KB ..." >&2
mkdir big small
ram=$tmp
if [[ -d /dev/shm && -w /dev/shm ]]; then
	ram=$(mktemp -d /dev/shm/c4gh-bench-batch.XXXXXX)
	trap 'rm -rf "$tmp" "$ram"' EXIT
fi
mkdir "$ram/big" "$ram/small"
head -c $((1000 * MiB)) /dev/urandom >"$ram/plain"
(cd "$ram/big" && split -a 3 -d -b $MiB ../plain f)
"$c4gh" encrypt -q --recipient_pk alice.pub -i "$ram/plain" -o plain.c4gh
"$c4gh" encrypt -q --recipient_pk alice.pub -o big/ "$ram"/big/f*
head -c 10000000 /dev/urandom >"$ram/small1k"
(cd "$ram/small" && split -a 4 -d -b 1000 ../small1k f)
rm "$ram/small1k"
"$c4gh" encrypt -q --recipient_pk alice.pub -o small/ --files-from <(find "$ram/small" -type f)
rm -rf "$ram/big" "$ram/small" "$ram/plain"
find big -name '*.c4gh' >big.list
find small -name '*.c4gh' >small.list
sync

now_us() {
	local t=${EPOCHREALTIME/[.,]/}
	echo "$t"
}
# set_aside: the outputs of the run before (out, out.d) emptied and
# moved aside (see above), not timed.
mkdir kept
set_aside() {
	local o
	for o in out out.d; do
		if [[ -e $o ]]; then
			find "$o" -type f -exec truncate -s 0 {} +
			mv "$o" "$(mktemp -d kept/XXXXXX)/"
		fi
	done
}
# best CMD...: the least wall time of RUNS runs of CMD, in seconds; the
# outputs are set aside between runs.
best() {
	local i t0 t1 d min=
	for ((i = 0; i < RUNS; i++)); do
		set_aside
		sync
		t0=$(now_us)
		"$@"
		t1=$(now_us)
		d=$((t1 - t0))
		if [[ -z $min || $d -lt $min ]]; then min=$d; fi
	done
	awk -v us="$min" 'BEGIN { printf "%.4f", us / 1e6 }'
}
single() { "$c4gh" decrypt --sk alice.sec -i plain.c4gh -o out; }
batch1k() { "$c4gh" decrypt -q --sk alice.sec -o out.d/ --files-from big.list; }
batch10k() { "$c4gh" decrypt -q --sk alice.sec -o out.d/ --files-from small.list; }
journaled() { "$c4gh" decrypt -q --sk alice.sec -o done.d/ --files-from small.list --journal j; }
# The same commands with the binary of $PREV.
with_prev() { local c4gh=$tmp/crypt4gh-prev; "$@"; }
# keep_least VAR T: VAR becomes T when it is empty or larger.
keep_least() {
	if [[ -z ${!1} ]] || awk -v a="$2" -v b="${!1}" 'BEGIN { exit !(a < b) }'; then printf -v "$1" %s "$2"; fi
}

echo "measuring, best of $RUNS ..." >&2
# The single file and the batch of the same bytes take turns, so that
# a change of load on a shared machine weighs on both alike.
t_single= t_1k= p_single= p_1k=
for ((r = 0; r < RUNS; r++)); do
	keep_least t_single "$(RUNS=1 best single)"
	keep_least t_1k "$(RUNS=1 best batch1k)"
	if [[ -n $PREV ]]; then
		keep_least p_single "$(RUNS=1 best with_prev single)"
		keep_least p_1k "$(RUNS=1 best with_prev batch1k)"
	fi
done
t_10k=$(best batch10k)
rm -rf done.d j
journaled # the run that fills the journal, not timed
t_journal=$(best journaled)

printf '%-44s %14s %16s   %s\n' "measure" "value" "ratio" "target"
printf '%-44s %14s %16s   %s\n' "decrypt 1,000 MiB file -> file" "$(awk -v s="$t_single" 'BEGIN { printf "%.0f MB/s", 1048.576 / s }')" "1" ""
printf '%-44s %14s %16s   %s\n' "batch decrypt 1,000 x 1 MiB -> DIR/" "$(awk -v s="$t_1k" 'BEGIN { printf "%.0f MB/s", 1048.576 / s }')" "$(awk -v a="$t_single" -v b="$t_1k" 'BEGIN { printf "%.2f of 1 file", a / b }')" ">= 0.80"
if [[ -n $PREV ]]; then
	printf '%-44s %14s %16s   %s\n' "  $PREV: decrypt 1,000 MiB file -> file" "$(awk -v s="$p_single" 'BEGIN { printf "%.0f MB/s", 1048.576 / s }')" "1" ""
	printf '%-44s %14s %16s   %s\n' "  $PREV: batch decrypt 1,000 x 1 MiB" "$(awk -v s="$p_1k" 'BEGIN { printf "%.0f MB/s", 1048.576 / s }')" "$(awk -v a="$p_single" -v b="$p_1k" 'BEGIN { printf "%.2f of 1 file", a / b }')" ""
	printf '%-44s %14s %16s   %s\n' "  batch 1,000 x 1 MiB, this against $PREV" "" "$(awk -v a="$p_1k" -v b="$t_1k" 'BEGIN { printf "%.2f times", a / b }')" ""
fi
printf '%-44s %14s %16s   %s\n' "batch decrypt 10,000 x 1 KB -> DIR/" "$(awk -v s="$t_10k" 'BEGIN { printf "%.0f files/s", 10000 / s }')" "" ">= 1000 files/s"
printf '%-44s %14s %16s   %s\n' "  the same, finished --journal" "$(awk -v s="$t_journal" 'BEGIN { printf "%.3f s/1,000", s / 10 }')" "" "<= 1 s/1,000"
