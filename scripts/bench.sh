#!/usr/bin/env bash
# bench.sh: how fast is the crypt4gh command on this machine?
#
# Run by hand from anywhere in the repository:   scripts/bench.sh
#
# Needs Go and coreutils. /usr/bin/time (GNU time, `apt-get install -y time`)
# is optional: without it the peak RSS lines print "n/a".
#
# It builds the command as a release is built (CGO_ENABLED=0, -trimpath,
# -s -w, the tag urfave_cli_no_docs) and scripts/ceiling into a temporary
# folder, makes a 1 GiB random file there, and prints every figure as a
# ratio to something measured in the same run, so that a busy machine moves
# both sides of a ratio alike:
#
#   ceiling      a bare ChaCha20-Poly1305 seal loop over 64 KiB segments on
#                every core (scripts/ceiling): no I/O, nothing to schedule
#   /dev/null    encrypt and decrypt file -> /dev/null, as a fraction of it;
#                also their CPU time (user + sys) against the loop's: the
#                share of the work that is sealing, which on an idle machine
#                bounds the wall-time fraction and which other load on the
#                cores hardly moves; and the CPU time of reading the file
#                (cat > /dev/null), which no encrypt can avoid: the seal
#                loop's share of seal + read is the best fraction possible
#   file->file   encrypt and decrypt file -> file, against `cat file > copy`
#   peak RSS     of encrypt and decrypt, 64 MiB and 1 GiB inputs
#   --range      decrypt of the last 1 MiB of the 1 GiB file, against a full
#                decrypt
#   reencrypt    of the 1 GiB file, against cp
#   1 KB         a tiny file end to end (encrypt, then decrypt)
#   start-up     crypt4gh --version, and a decrypt of a 1 KB file to
#                /dev/null: the mean of STARTS runs (default 200), the best
#                of RUNS such means; mostly process start and package
#                initialisation
#
# then the body/ benchmarks (go test -bench) with allocations per call.
# With PREV=REV (a git revision, e.g. PREV=main~5) the same commands of that
# version (built as it was then: CGO_ENABLED=0 go build) are timed in the
# same run, and each figure is also given as a ratio to the previous
# version's, and the writes to a file once more
# against the previous version followed by "sync out ." (the fsync of the
# output and its folder that this version does itself). With MOUNT=1 the
# mount benchmarks run too (they need FUSE and 2 GiB in $TMPDIR):
# scripts/bench-mount.sh (fresh mounts, the mounted file cold, PREV too)
# and the mount's go test benchmark (the page cache warm); with S3=1,
# scripts/bench-s3.sh (object storage against a local versitygw); with
# REGION=1, scripts/bench-region.sh (a region of a 1 GiB BAM; needs
# samtools and 3 GiB in $TMPDIR); with SERVE=1, scripts/bench-serve.sh (a
# Crypt4GH ticket's time and the data endpoint's speed, with plain static
# servers as the ceiling; needs samtools, curl and jq). Unless BATCH=0,
# scripts/bench-batch.sh (with PREV too) (batch decrypt of 1,000 x 1 MiB
# and 10,000 x 1 KB files against one file, and a finished --journal).
# Unless OTHER=0, the other Go
# implementation's command (github.com/neicnordic/crypt4gh v1.15.0, built
# from the module cache or the proxy) is timed on the same files: its
# start-up, a 1 KB decrypt, and encrypt and decrypt of the 1 GiB file,
# file to file (it writes FILE.c4gh and FILE beside its input).
# Unless AGENT=0, the key agent: a 1 KB decrypt through a daemon agent (no
# --sk) against the same decrypt with --sk on a key without passphrase,
# STARTS runs each in the same run, and 10,000 header packets opened
# through an agent over its socket (go test -bench AgentOpen10k ./agent/).
# Each timing is the best (least) of RUNS runs (default 5) with the files in
# the page cache. It takes two to three minutes on a 2-core machine; set
# GOTEST=0 to skip the go test part. Everything is removed on exit.
set -euo pipefail

RUNS=${RUNS:-5}
STARTS=${STARTS:-200}
GOTEST=${GOTEST:-1}
PREV=${PREV:-}
MOUNT=${MOUNT:-0}
S3=${S3:-0}
REGION=${REGION:-0}
SERVE=${SERVE:-0}
BATCH=${BATCH:-1}
OTHER=${OTHER:-1}
AGENT=${AGENT:-1}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/c4gh-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

echo "building in $tmp ..." >&2
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -tags urfave_cli_no_docs -o "$tmp/crypt4gh" . &&
	go build -o "$tmp/ceiling" ./scripts/ceiling)
c4gh=$tmp/crypt4gh
if [[ -n $PREV ]]; then
	echo "building $PREV ..." >&2
	mkdir "$tmp/prevsrc"
	git -C "$root" archive "$PREV" | tar -x -C "$tmp/prevsrc"
	(cd "$tmp/prevsrc" && CGO_ENABLED=0 go build -o "$tmp/crypt4gh-prev" .)
	rm -rf "$tmp/prevsrc"
fi

other=
if [[ $OTHER != 0 ]]; then
	echo "building neicnordic/crypt4gh v1.15.0 ..." >&2
	if (cd "$root" && go mod download github.com/neicnordic/crypt4gh@v1.15.0) &&
		cp -r "$(go env GOMODCACHE)/github.com/neicnordic/crypt4gh@v1.15.0" "$tmp/othersrc" && chmod -R u+w "$tmp/othersrc" &&
		(cd "$tmp/othersrc" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$tmp/crypt4gh-other" .); then
		other=$tmp/crypt4gh-other
	else
		echo "bench: could not build the other implementation; its rows are left out" >&2
	fi
	rm -rf "$tmp/othersrc"
fi

"$c4gh" keygen --nocrypt --sk alice.sec --pk alice.pub >/dev/null 2>&1
"$c4gh" keygen --nocrypt --sk bob.sec --pk bob.pub >/dev/null 2>&1

GiB=$((1 << 30))
MiB=$((1 << 20))
echo "making a 1 GiB random file ..." >&2
head -c "$GiB" /dev/urandom >plain
head -c $((64 * MiB)) plain >plain64
head -c 1000 plain >plain1k
"$c4gh" encrypt --recipient_pk alice.pub -i plain -o plain.c4gh
"$c4gh" encrypt --recipient_pk alice.pub -i plain64 -o plain64.c4gh
"$c4gh" encrypt --recipient_pk alice.pub -i plain1k -o plain1k.c4gh
sync

# now_us prints the wall clock in microseconds, without starting a process.
now_us() {
	local t=${EPOCHREALTIME/[.,]/}
	echo "$t"
}

# best CMD...: run CMD (a shell function or command) RUNS times, removing the
# outputs and flushing the page cache to disk in between (not timed), and
# print the least wall time in seconds.
best() {
	local i t0 t1 d min=
	for ((i = 0; i < RUNS; i++)); do
		rm -f out copy
		sync # no writeback of earlier files during the run
		t0=$(now_us)
		"$@"
		t1=$(now_us)
		d=$((t1 - t0))
		if [[ -z $min || $d -lt $min ]]; then min=$d; fi
	done
	rm -f out copy
	awk -v us="$min" 'BEGIN { printf "%.4f", us / 1e6 }'
}

# rss CMD...: the largest peak RSS, in MiB, of 3 runs of CMD, or n/a.
rss() {
	if [[ ! -x /usr/bin/time ]]; then
		echo n/a
		return
	fi
	local i kb max=0
	for i in 1 2 3; do
		/usr/bin/time -v -o time.txt "$@" >/dev/null
		kb=$(awk -F': *' '/Maximum resident set size/ { print $2 }' time.txt)
		if ((kb > max)); then max=$kb; fi
	done
	awk -v kb="$max" 'BEGIN { printf "%.1f MiB", kb / 1024 }'
}

# cpu CMD...: the least CPU time (user + sys, seconds) of RUNS runs of CMD,
# or n/a. Unlike wall time it hardly moves when other work shares the cores.
cpu() {
	if [[ ! -x /usr/bin/time ]]; then
		echo n/a
		return
	fi
	local i
	for ((i = 0; i < RUNS; i++)); do
		/usr/bin/time -f '%U %S' -o time.txt "$@" >/dev/null
		awk '{ printf "%.2f\n", $1 + $2 }' time.txt
	done | sort -n | head -1
}

enc_null() { "$c4gh" encrypt --recipient_pk alice.pub -i plain >/dev/null; }
dec_null() { "$c4gh" decrypt --sk alice.sec -i plain.c4gh >/dev/null; }
enc_file() { "$c4gh" encrypt --recipient_pk alice.pub -i plain -o out; }
dec_file() { "$c4gh" decrypt --sk alice.sec -i plain.c4gh -o out; }
cat_file() { cat plain >copy; }
cp_file() { cp plain.c4gh copy; }
reenc() { "$c4gh" reencrypt --sk alice.sec --recipient_pk bob.pub -i plain.c4gh -o out; }
range_last() { "$c4gh" decrypt --sk alice.sec --range $((GiB - MiB))-$GiB -i plain.c4gh >/dev/null; }
# The same commands with the binary of $PREV.
with_prev() { local c4gh=$tmp/crypt4gh-prev; "$@"; }
# A command that writes out, then the fsync of out and of its folder that
# this version does itself: for a version that left them to chance.
synced() { "$@" && sync out .; }
# start_version, start_dec1k: STARTS process starts in a row.
start_version() {
	local i
	for ((i = 0; i < STARTS; i++)); do "$c4gh" --version >/dev/null; done
}
start_dec1k() {
	local i
	for ((i = 0; i < STARTS; i++)); do "$c4gh" decrypt --sk alice.sec -i plain1k.c4gh >/dev/null; done
}
tiny() {
	"$c4gh" encrypt --recipient_pk alice.pub -i plain1k -o tiny.c4gh --force
	"$c4gh" decrypt --sk alice.sec -i tiny.c4gh -o tiny.out --force
}

# Correctness first: a fast wrong answer is no answer.
dec_file && cmp -s out plain || { echo "bench: decrypt does not give the plaintext back" >&2; exit 1; }
rm -f out
range_last_check() { "$c4gh" decrypt --sk alice.sec --range $((GiB - MiB))-$GiB -i plain.c4gh -o out; }
range_last_check && cmp -s out <(tail -c "$MiB" plain) || { echo "bench: --range gives wrong bytes" >&2; exit 1; }
rm -f out
reenc && "$c4gh" decrypt --sk bob.sec -i out | cmp -s - plain || { echo "bench: reencrypt broke the file" >&2; exit 1; }
tiny && cmp -s tiny.out plain1k || { echo "bench: the 1 KB round trip differs" >&2; exit 1; }
rm -f out

echo "measuring, best of $RUNS ..." >&2
mb() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.0f", b / s / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f%%", 100 * a / b }'; }
ms() { awk -v s="$1" 'BEGIN { printf "%.1f ms", s * 1000 }'; }
# per_start: the time of STARTS runs, per run.
per_start() { awk -v s="$1" -v n="$STARTS" 'BEGIN { printf "%.2f ms", s * 1000 / n }'; }

ceiling=$("$tmp/ceiling" -size "$GiB" -runs "$RUNS")
t_enc_null=$(best enc_null)
t_dec_null=$(best dec_null)
t_cat=$(best cat_file)
t_enc_file=$(best enc_file)
t_dec_file=$(best dec_file)
t_cp=$(best cp_file)
t_reenc=$(best reenc)
t_range=$(best range_last)
t_tiny=$(best tiny)
t_start_version=$(best start_version)
t_start_dec1k=$(best start_dec1k)
c_ceiling=$(cpu "$tmp/ceiling" -size "$GiB" -runs 1)
c_read=$(cpu cat plain)
c_enc=$(cpu "$c4gh" encrypt --recipient_pk alice.pub -i plain)
c_dec=$(cpu "$c4gh" decrypt --sk alice.sec -i plain.c4gh)
rss_e64=$(rss "$c4gh" encrypt --recipient_pk alice.pub -i plain64)
rss_e1g=$(rss "$c4gh" encrypt --recipient_pk alice.pub -i plain)
rss_d64=$(rss "$c4gh" decrypt --sk alice.sec -i plain64.c4gh)
rss_d1g=$(rss "$c4gh" decrypt --sk alice.sec -i plain.c4gh)
# The ceiling again, in case the load changed while the rest ran; the
# better of the two is the one that counts (it makes the ratios smaller).
ceiling=$( ("$tmp/ceiling" -size "$GiB" -runs "$RUNS"; echo "$ceiling") | sort -n | tail -1)

mb_enc=$(mb "$GiB" "$t_enc_null")
mb_dec=$(mb "$GiB" "$t_dec_null")

cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
echo "crypt4gh bench, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs (${cpu:-unknown}), $(go env GOVERSION)"
echo "1 GiB random file, page cache warm, each time the best of $RUNS runs"
echo
printf '%-40s %12s %14s   %s\n' "measure" "value" "ratio" "target"
printf '%-40s %12s %14s   %s\n' "ceiling: seal loop, all cores" "$ceiling MB/s" "1" ""
printf '%-40s %12s %14s   %s\n' "encrypt file -> /dev/null" "$mb_enc MB/s" "$(ratio "$mb_enc" "$ceiling") of ceiling" ">= 0.80"
printf '%-40s %12s %14s   %s\n' "decrypt file -> /dev/null" "$mb_dec MB/s" "$(ratio "$mb_dec" "$ceiling") of ceiling" ">= 0.80"
if [[ $c_ceiling != n/a ]]; then
	printf '%-40s %12s %14s   %s\n' "  CPU time: seal loop" "${c_ceiling} s" "1" ""
	printf '%-40s %12s %14s   %s\n' "  CPU time: cat file > /dev/null" "${c_read} s" "" ""
	printf '%-40s %12s %14s   %s\n' "  bound: seal / (seal + cat > /dev/null)" "" "$(awk -v a="$c_ceiling" -v b="$c_read" 'BEGIN { printf "%.2f", a / (a + b) }') of ceiling" ""
	printf '%-40s %12s %14s   %s\n' "  CPU time: encrypt -> /dev/null" "${c_enc} s" "$(ratio "$c_ceiling" "$c_enc") of ceiling" ""
	printf '%-40s %12s %14s   %s\n' "  CPU time: decrypt -> /dev/null" "${c_dec} s" "$(ratio "$c_ceiling" "$c_dec") of ceiling" ""
fi
printf '%-40s %12s %14s   %s\n' "cat file > copy" "${t_cat} s" "1" ""
printf '%-40s %12s %14s   %s\n' "encrypt file -> file" "${t_enc_file} s" "$(ratio "$t_enc_file" "$t_cat") x cat" "<= 1.20"
printf '%-40s %12s %14s   %s\n' "decrypt file -> file" "${t_dec_file} s" "$(ratio "$t_dec_file" "$t_cat") x cat" "<= 1.20"
printf '%-40s %12s %14s   %s\n' "peak RSS encrypt, 64 MiB" "$rss_e64" "" "<= 16 MiB"
printf '%-40s %12s %14s   %s\n' "peak RSS encrypt, 1 GiB" "$rss_e1g" "" "<= 16 MiB, same"
printf '%-40s %12s %14s   %s\n' "peak RSS decrypt, 64 MiB" "$rss_d64" "" "<= 16 MiB"
printf '%-40s %12s %14s   %s\n' "peak RSS decrypt, 1 GiB" "$rss_d1g" "" "<= 16 MiB, same"
printf '%-40s %12s %14s   %s\n' "decrypt --range last 1 MiB of 1 GiB" "$(ms "$t_range")" "$(pct "$t_range" "$t_dec_null") of full" "<= 2%"
printf '%-40s %12s %14s   %s\n' "cp file.c4gh copy" "${t_cp} s" "1" ""
printf '%-40s %12s %14s   %s\n' "reencrypt 1 GiB" "${t_reenc} s" "$(ratio "$t_reenc" "$t_cp") x cp" "<= 1.20"
printf '%-40s %12s %14s   %s\n' "1 KB file: encrypt + decrypt" "$(ms "$t_tiny")" "" ""
printf '%-40s %12s %14s   %s\n' "start-up: --version" "$(per_start "$t_start_version")" "" ""
printf '%-40s %12s %14s   %s\n' "start-up: decrypt 1 KB -> /dev/null" "$(per_start "$t_start_dec1k")" "" ""

if [[ $AGENT != 0 ]]; then
	eval "$("$c4gh" agent --sk alice.sec --daemon)"
	trap 'kill "$CRYPT4GH_AGENT_PID" 2>/dev/null; rm -rf "$tmp"' EXIT # stopped even if the bench fails
	# No --sk, and no C4GH_SECRET_KEY from the caller: through the agent.
	agent_dec1k() {
		(
			unset C4GH_SECRET_KEY
			for ((i = 0; i < STARTS; i++)); do "$c4gh" decrypt -i plain1k.c4gh >/dev/null; done
		)
	}
	(unset C4GH_SECRET_KEY; "$c4gh" decrypt -i plain1k.c4gh | cmp -s - plain1k) ||
		{ echo "bench: decrypt through the agent differs" >&2; exit 1; }
	t_agent_dec1k=$(best agent_dec1k)
	t_sk_dec1k=$(best start_dec1k)
	"$c4gh" agent --stop >/dev/null
	unset CRYPT4GH_AGENT CRYPT4GH_PK CRYPT4GH_AGENT_PID
	trap 'rm -rf "$tmp"' EXIT
	# In process, where start-up does not drown it: a 1 KB decrypt with the
	# key and through the agent (a new connection each time, as a command
	# makes), in one go test run.
	(cd "$root" && go test -run '^$' -bench 'AgentOpen10k$|Decrypt1KB' -benchtime 1x ./agent/ >/dev/null)
	gobench=$(cd "$root" && go test -run '^$' -bench 'AgentOpen10k$' -benchtime 1x ./agent/ &&
		go test -run '^$' -bench 'Decrypt1KB' -benchtime 500x ./agent/)
	t_agent10k=$(awk '/^BenchmarkAgentOpen10k/ { printf "%.2f", $3 / 1e9 }' <<<"$gobench")
	g_sk=$(awk '/^BenchmarkDecrypt1KB\/sk/ { print $3 }' <<<"$gobench")
	g_agent=$(awk '/^BenchmarkDecrypt1KB\/agent/ { print $3 }' <<<"$gobench")
	printf '%-40s %12s %14s   %s\n' "agent: 10,000 header packets opened" "${t_agent10k} s" "" "<= 5 s"
	printf '%-40s %12s %14s   %s\n' "agent: decrypt 1 KB, --sk" "$(per_start "$t_sk_dec1k")" "" ""
	printf '%-40s %12s %14s   %s\n' "agent: decrypt 1 KB, through the agent" "$(per_start "$t_agent_dec1k")" \
		"$(awk -v a="$t_agent_dec1k" -v b="$t_sk_dec1k" -v n="$STARTS" 'BEGIN { printf "%+.2f ms", (a - b) * 1000 / n }')" "<= +1 ms"
	printf '%-40s %12s %14s   %s\n' "agent: decrypt 1 KB in process, --sk" "$(awk -v ns="$g_sk" 'BEGIN { printf "%.3f ms", ns / 1e6 }')" "" ""
	printf '%-40s %12s %14s   %s\n' "agent: decrypt 1 KB in process, agent" "$(awk -v ns="$g_agent" 'BEGIN { printf "%.3f ms", ns / 1e6 }')" \
		"$(awk -v a="$g_agent" -v b="$g_sk" 'BEGIN { printf "%+.3f ms", (a - b) / 1e6 }')" "<= +1 ms"
fi

if [[ -n $other ]]; then
	# The other implementation reads and writes beside its input: FILE
	# to FILE.c4gh, FILE.c4gh to FILE, into a folder of its own.
	mkdir -p other
	ln -f plain other/plain 2>/dev/null || cp plain other/plain
	cp plain1k.c4gh other/tiny.c4gh
	o_enc() { rm -f other/plain.c4gh; C4GH_PASSPHRASE= "$other" encrypt -f other/plain -p alice.pub </dev/null >/dev/null 2>&1; }
	o_enc && cp other/plain.c4gh other/enc.c4gh && rm other/plain
	o_dec() { rm -f other/enc; C4GH_PASSPHRASE= "$other" decrypt -f other/enc.c4gh -s alice.sec >/dev/null 2>&1; }
	o_dec && cmp -s other/enc plain || { echo "bench: the other implementation does not decrypt our key's file" >&2; }
	ln -f plain other/plain 2>/dev/null || cp plain other/plain
	o_start_version() {
		local i
		for ((i = 0; i < STARTS; i++)); do "$other" --version >/dev/null; done
	}
	o_start_dec1k() {
		local i
		for ((i = 0; i < STARTS; i++)); do rm -f other/tiny; C4GH_PASSPHRASE= "$other" decrypt -f other/tiny.c4gh -s alice.sec >/dev/null 2>&1; done
	}
	o_t_enc=$(best o_enc)
	o_t_dec=$(best o_dec)
	o_t_version=$(best o_start_version)
	o_t_dec1k=$(best o_start_dec1k)
	echo
	echo "against the other Go implementation (neicnordic/crypt4gh v1.15.0), same run: this / other (below 1: faster)"
	printf '%-40s %12s %12s %10s\n' "measure" "this" "other" "ratio"
	printf '%-40s %10s s %10s s %10s\n' "encrypt 1 GiB file -> file" "$t_enc_file" "$o_t_enc" "$(ratio "$t_enc_file" "$o_t_enc")"
	printf '%-40s %10s s %10s s %10s\n' "decrypt 1 GiB file -> file" "$t_dec_file" "$o_t_dec" "$(ratio "$t_dec_file" "$o_t_dec")"
	printf '%-40s %12s %12s %10s\n' "start-up: --version" "$(per_start "$t_start_version")" "$(per_start "$o_t_version")" "$(ratio "$t_start_version" "$o_t_version")"
	printf '%-40s %12s %12s %10s\n' "start-up: decrypt 1 KB (to a file there)" "$(per_start "$t_start_dec1k")" "$(per_start "$o_t_dec1k")" "$(ratio "$t_start_dec1k" "$o_t_dec1k")"
	rm -rf other
fi

if [[ -n $PREV ]]; then
	p_enc_null=$(best with_prev enc_null)
	p_dec_null=$(best with_prev dec_null)
	p_enc_file=$(best with_prev enc_file)
	p_dec_file=$(best with_prev dec_file)
	p_range=$(best with_prev range_last)
	p_reenc=$(best with_prev reenc)
	p_enc_file_sync=$(best with_prev synced enc_file)
	p_dec_file_sync=$(best with_prev synced dec_file)
	p_reenc_sync=$(best with_prev synced reenc)
	p_start_version=$(best with_prev start_version)
	p_start_dec1k=$(best with_prev start_dec1k)
	# This version once more, right after: the load may have changed.
	t2_enc_null=$(best enc_null)
	t2_dec_null=$(best dec_null)
	t2_enc_file=$(best enc_file)
	t2_dec_file=$(best dec_file)
	t2_range=$(best range_last)
	t2_reenc=$(best reenc)
	t2_start_version=$(best start_version)
	t2_start_dec1k=$(best start_dec1k)
	lesser() { awk -v a="$1" -v b="$2" 'BEGIN { print (a < b ? a : b) }'; }
	echo
	echo "this version against $PREV ($(git -C "$root" rev-parse --short "$PREV")), same run: time / previous time (below 1: faster)"
	printf '%-40s %12s %12s %10s\n' "measure" "this" "previous" "ratio"
	for m in enc_null dec_null enc_file dec_file range reenc start_version start_dec1k; do
		a=$(eval echo "\$t_$m"); a2=$(eval echo "\$t2_$m"); b=$(eval echo "\$p_$m")
		a=$(lesser "$a" "$a2")
		printf '%-40s %10s s %10s s %10s\n' "$m" "$a" "$b" "$(ratio "$a" "$b")"
	done
	# The writes to a file against the previous version with the fsync
	# (of the file and its folder) that this one does: what is left is
	# the rest of the change.
	for m in enc_file dec_file reenc; do
		a=$(lesser "$(eval echo "\$t_$m")" "$(eval echo "\$t2_$m")"); b=$(eval echo "\$p_${m}_sync")
		printf '%-40s %10s s %10s s %10s\n' "$m, previous + fsync" "$a" "$b" "$(ratio "$a" "$b")"
	done
fi

if [[ $MOUNT != 0 ]]; then
	echo
	RUNS=$RUNS PREV=$PREV bash "$root/scripts/bench-mount.sh"
	echo
	echo "mount (go test -bench Mount ./mount/): cat of a mounted 1 GiB file against decrypt, random 4 KiB reads, RSS"
	(cd "$root" && go test -run '^$' -bench Mount -benchtime 1x ./mount/) | grep -v '^\(goos\|goarch\|pkg\|cpu\|PASS\|ok\)'
fi

if [[ $REGION != 0 ]]; then
	echo
	RUNS=$RUNS bash "$root/scripts/bench-region.sh"
fi

if [[ $SERVE != 0 ]]; then
	echo
	RUNS=$RUNS bash "$root/scripts/bench-serve.sh"
fi

if [[ $BATCH != 0 ]]; then
	echo
	RUNS=$RUNS PREV=$PREV bash "$root/scripts/bench-batch.sh"
fi

if [[ $S3 != 0 ]]; then
	echo
	bash "$root/scripts/bench-s3.sh"
fi

if [[ $GOTEST != 0 ]]; then
	echo
	echo "go test -bench (body/): B/op and allocs/op are per call, the same at every size"
	(cd "$root" && go test -run '^$' -bench 'Encrypt|Decrypt|SealLoop' -benchtime 300ms ./body/) |
		awk '/^Benchmark/ { printf "%-34s %14s ns/op %10s MB/s %9s B/op %4s allocs/op\n", $1, $3, $5, $7, $9 }'
fi
