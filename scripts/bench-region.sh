#!/usr/bin/env bash
# bench-region.sh: what does a region of a large encrypted BAM cost?
#
# Run by hand from anywhere in the repository:   scripts/bench-region.sh
# (scripts/bench.sh calls it with REGION=1).
#
# Needs Go, coreutils and samtools, and about 3 × SIZE_MB in $TMPDIR.
#
# It builds the command as a release is built and scripts/samgen, makes a
# sorted, indexed BAM of about SIZE_MB MiB (default 1024; reads of 100
# random bases on two references) with samtools, encrypts it and its
# index, and prints each figure as a ratio to something measured in the
# same run:
#
#   decrypt --region   a region of about 1 MiB of the BAM to /dev/null:
#                      its time against the start-up of the command
#                      (crypt4gh --version), and the work beyond it in
#                      ms: the median over the rounds of a decrypt less
#                      the start-up timed just before it (and the best
#                      decrypt less the best start-up)
#   splice --region    the same region as a crypt4gh file for another key:
#                      its time against copying the bytes of the planned
#                      segments (head -c of that many bytes to a file),
#                      twice: the copy committed as the command commits
#                      every output (written to a temporary file, fsynced,
#                      renamed, its folder fsynced), and the copy left in
#                      the page cache without any fsync
#   planned            the bytes of the segments read, against the file
#
# Each time is the best of RUNS runs (default 5). With PREV=REV (a git
# revision) the same commands of that version are timed in the same run,
# taking turns, and given against this one. With KEEP=DIR the BAM, its
# index and keys are made in DIR, and used from there when they are there
# already (else in a temporary folder, removed at the end). The bytes that a region
# of an object costs over S3 are checked by the tests
# (internal/cli TestRegionObject: at most twice the planned bytes, the
# index and a bounded read-ahead).
set -euo pipefail

RUNS=${RUNS:-5}
SIZE_MB=${SIZE_MB:-1024}
PREV=${PREV:-}
KEEP=${KEEP:-}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/c4gh-bench-region.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
data=$tmp
if [[ -n $KEEP ]]; then
	mkdir -p "$KEEP"
	data=$(cd "$KEEP" && pwd)
fi
cd "$data"
command -v samtools >/dev/null || { echo "bench-region: samtools is needed" >&2; exit 1; }

echo "bench-region: building in $tmp ..." >&2
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -tags urfave_cli_no_docs -o "$tmp/crypt4gh" . &&
	go build -o "$tmp/samgen" ./scripts/samgen)
c4gh=$tmp/crypt4gh
if [[ -n $PREV ]]; then
	echo "bench-region: building $PREV ..." >&2
	mkdir "$tmp/prevsrc"
	git -C "$root" archive "$PREV" | tar -x -C "$tmp/prevsrc"
	(cd "$tmp/prevsrc" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -tags urfave_cli_no_docs -o "$tmp/crypt4gh-prev" .)
	rm -rf "$tmp/prevsrc"
fi

if [[ ! -f reads.bam.bai.c4gh || ! -f them.pub ]]; then
	# About 36 bytes of BAM a read (random bases, constant qualities).
	reads=$((SIZE_MB * 1024 * 1024 / 36))
	echo "bench-region: making a BAM of $reads reads ..." >&2
	"$tmp/samgen" -reads "$reads" | samtools view -@ 2 -b -o reads.bam -
	samtools index reads.bam
	"$c4gh" keygen --sk me.sec --pk me.pub --nocrypt -f >/dev/null
	"$c4gh" keygen --sk them.sec --pk them.pub --nocrypt -f >/dev/null
	"$c4gh" encrypt --recipient_pk me.pub -q -i reads.bam -o reads.bam.c4gh
	"$c4gh" encrypt --recipient_pk me.pub -q -i reads.bam.bai -o reads.bam.bai.c4gh
	rm reads.bam.bai
fi

# A region of about 1 MiB of BAM: the references are samgen's, 1e8 bases
# each, with reads spread evenly, so half the BAM spans 1e8 bases.
bam=$(stat -c %s reads.bam)
span=$((100000000 * (1 << 20) / (bam / 2)))
region="chr1:50000000-$((50000000 + span))"

# best CMD...: the best wall time in ms of RUNS runs of CMD.
best() {
	local b=
	for _ in $(seq "$RUNS"); do
		local t0 t1
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1
		t1=$(date +%s%N)
		local ms=$(((t1 - t0) / 1000))
		if [[ -z $b || $ms -lt $b ]]; then b=$ms; fi
	done
	echo "$b" # microseconds
}

"$c4gh" decrypt --sk me.sec --region "$region" -i reads.bam.c4gh -o "$tmp/r.bam" -f
plan=$("$c4gh" inspect --sk me.sec --region "$region" reads.bam.c4gh)
planned=$(sed -n 's/.*read: \([0-9]*\) bytes.*/\1/p' <<<"$plan")

# The commands timed, of the binary $1.
start_cmd() { sh -c "'$1' --version > /dev/null"; }
# To /dev/null: the work, not the fsync of a committed file.
dec_cmd() { sh -c "'$1' decrypt --sk me.sec --region '$region' -i reads.bam.c4gh > /dev/null"; }
spl_cmd() { "$1" splice --sk me.sec --recipient_pk them.pub --region "$region" -i reads.bam.c4gh -o "$tmp/r.bam.c4gh" -f; }
# The copies: committed as outfile commits a file, and without an fsync.
copy_cmd() { sh -c "head -c $planned reads.bam.c4gh > '$tmp/copy.tmp' && sync '$tmp/copy.tmp' && mv '$tmp/copy.tmp' '$tmp/copy' && sync '$tmp'"; }
nosync_cmd() { sh -c "head -c $planned reads.bam.c4gh > '$tmp/copy'"; }

# With PREV, the runs of the two versions take turns: each best of RUNS
# is of runs spread over the same minutes.
prev=${PREV:+$tmp/crypt4gh-prev}
runs=$RUNS
RUNS=1
# The work of each round, a decrypt less the start-up timed just before
# it: their median is steadier than the difference of two bests, which a
# single lucky start-up moves by a millisecond or more.
works=() p_works=()
for _ in $(seq "$runs"); do
	for m in start dec spl; do
		t=$(best "${m}_cmd" "$c4gh")
		if [[ -z ${!m:-} || $t -lt ${!m} ]]; then printf -v "$m" %s "$t"; fi
		printf -v "r_$m" %s "$t"
		if [[ -n $prev ]]; then
			t=$(best "${m}_cmd" "$prev")
			v=p_$m
			if [[ -z ${!v:-} || $t -lt ${!v} ]]; then printf -v "$v" %s "$t"; fi
			printf -v "rp_$m" %s "$t"
		fi
	done
	works+=($((r_dec - r_start)))
	if [[ -n $prev ]]; then p_works+=($((rp_dec - rp_start))); fi
	for m in copy nosync; do
		t=$(best "${m}_cmd")
		if [[ -z ${!m:-} || $t -lt ${!m} ]]; then printf -v "$m" %s "$t"; fi
	done
done
size=$(stat -c %s reads.bam.c4gh)
out=$(stat -c %s "$tmp/r.bam")

samtools quickcheck "$tmp/r.bam"
printf 'region %s of a %d MiB BAM (%d bytes of BAM out)\n' "$region" "$((size >> 20))" "$out"
# median N...: the median of the numbers given.
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
report() {
	awk -v s="$1" -v d="$2" -v p="$3" -v c="$copy" -v n="$nosync" -v w="$4" -v who="$5" 'BEGIN {
	printf "  decrypt --region   %.2f x start-up (--version); %.1f ms of work beyond it (median of the rounds; best against best: %.1f)%s\n", d / s, w / 1000, (d - s) / 1000, who
	printf "  splice --region    %.2f x copying the planned segments to a committed file (fsync), %.2f x without fsync%s\n", p / c, p / n, who
}'
}
report "$start" "$dec" "$spl" "$(median "${works[@]}")" ""
if [[ -n $prev ]]; then
	report "$p_start" "$p_dec" "$p_spl" "$(median "${p_works[@]}")" " ($PREV)"
fi
awk -v pl="$planned" -v sz="$size" 'BEGIN { printf "  planned            %d bytes: %.4f of the file\n", pl, pl / sz }'
