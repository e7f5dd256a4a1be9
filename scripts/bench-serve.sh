#!/usr/bin/env bash
# bench-serve.sh: how fast does crypt4gh serve answer tickets and data?
#
# Run by hand from anywhere in the repository:   scripts/bench-serve.sh
# (scripts/bench.sh calls it with SERVE=1).
#
# Needs Go, coreutils, samtools, curl and jq (nginx, when installed, for
# a second ceiling), and about 3 × SIZE_MB in $TMPDIR.
#
# It builds the command as a release is built, scripts/samgen and
# scripts/fileserve, makes a sorted, indexed BAM of about SIZE_MB MiB
# (default 256) with samtools, encrypts it and its index for the
# server's key, starts `crypt4gh serve --plaintext` on a loopback port
# over that folder, and prints each figure against something measured in
# the same run:
#
#   C4GH ticket        a Crypt4GH ticket for a region of about 1 MiB (the
#                      request's wall time, curl's time_total): against a
#                      budget of 20 ms plus the index read (a decrypt of
#                      the index to /dev/null, less the command's start-up);
#                      a ticket (cold) reads the index when it changed
#                      since the last (the script touches it), the others
#                      find it in the server's cache;
#                      and the server's CPU time a ticket (20 tickets),
#                      which a loaded machine inflates less than wall time
#   data, plaintext    the whole file through a plaintext ticket's data
#                      URL (curl to /dev/null): the speed of decrypt
#                      --range of the same bytes to /dev/null, as a
#                      fraction of the server's (≥ 0.8 is the target: 1.0
#                      means as fast)
#   data, C4GH         the body of a Crypt4GH ticket of the whole file
#                      (its segment range): a plain read of the same bytes
#                      by the same client (curl of file://, to /dev/null)
#                      against the server; cat of the file for scale
#   ceiling            the same range from a plain static file server
#                      (scripts/fileserve: net/http's FileServer, sendfile;
#                      and nginx, sendfile on, when it is installed), to
#                      the same client: what any HTTP server reaches over
#                      loopback here, against curl's read of the file, and
#                      the server's data endpoint against it
#
# Each time is the best of RUNS runs (default 5).
set -euo pipefail

RUNS=${RUNS:-5}
SIZE_MB=${SIZE_MB:-256}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/c4gh-bench-serve.XXXXXX")
pid=
others=()
trap 'for p in $pid "${others[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
cd "$tmp"
for t in samtools curl jq; do
	command -v "$t" >/dev/null || { echo "bench-serve: $t is needed" >&2; exit 1; }
done

echo "bench-serve: building in $tmp ..." >&2
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -tags urfave_cli_no_docs -o "$tmp/crypt4gh" . &&
	go build -o "$tmp/samgen" ./scripts/samgen && go build -o "$tmp/fileserve" ./scripts/fileserve)
c4gh=$tmp/crypt4gh

reads=$((SIZE_MB * 1024 * 1024 / 36))
echo "bench-serve: making a BAM of $reads reads ..." >&2
./samgen -reads "$reads" | samtools view -@ 2 -b -o reads.bam -
samtools index reads.bam
"$c4gh" keygen --sk me.sec --pk me.pub --nocrypt -f >/dev/null
"$c4gh" keygen --sk them.sec --pk them.pub --nocrypt -f >/dev/null
mkdir src
"$c4gh" encrypt --recipient_pk me.pub -q -i reads.bam -o src/reads.bam.c4gh
"$c4gh" encrypt --recipient_pk me.pub -q -i reads.bam.bai -o src/reads.bam.bai.c4gh
bam=$(stat -c %s reads.bam)
rm reads.bam reads.bam.bai

# address NAME: the http://HOST:PORT that the server NAME, started with
# its stderr in NAME.log, says it serves at, once it says so.
address() {
	local a=
	for _ in $(seq 100); do
		a=$(sed -n 's/.* at \(http:\/\/[^ ,]*\).*/\1/p' "$1.log" | head -1)
		[[ -n $a ]] && break
		sleep 0.05
	done
	[[ -n $a ]] || { echo "bench-serve: $1 did not start:" >&2; cat "$1.log" >&2; exit 1; }
	echo "$a"
}

"$c4gh" serve --sk me.sec --plaintext --listen 127.0.0.1:0 src 2>serve.log &
pid=$!
base=$(address serve)
pub=$(base64 -w0 them.pub)

# A region of about 1 MiB of BAM (samgen's references: 1e8 bases each).
span=$((100000000 * (1 << 20) / (bam / 2)))
query="referenceName=chr1&start=50000000&end=$((50000000 + span))"

# best CMD...: the best wall time in microseconds of RUNS runs of CMD.
best() {
	local b=
	for _ in $(seq "$RUNS"); do
		local t0 t1
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1
		t1=$(date +%s%N)
		local us=$(((t1 - t0) / 1000))
		if [[ -z $b || $us -lt $b ]]; then b=$us; fi
	done
	echo "$b"
}

# bestcurl ARGS...: the best time_total of RUNS requests, in microseconds.
bestcurl() {
	local b=
	for _ in $(seq "$RUNS"); do
		local us
		us=$(curl -sf -o /dev/null -w '%{time_total}' "$@" | awk '{ printf "%d", $1 * 1e6 }')
		if [[ -z $b || $us -lt $b ]]; then b=$us; fi
	done
	echo "$b"
}

# A ticket reads the index the first time; the server keeps it for the
# next ones, until the index changes (touch gives it another identity).
cold=
for _ in $(seq "$RUNS"); do
	touch src/reads.bam.bai.c4gh
	us=$(curl -sf -o /dev/null -w '%{time_total}' -H "Htsget-Context-Public-Key: $pub" "$base/reads/reads?$query&encryptionScheme=C4GH" | awk '{ printf "%d", $1 * 1e6 }')
	if [[ -z $cold || $us -lt $cold ]]; then cold=$us; fi
done
ticket=$(bestcurl -H "Htsget-Context-Public-Key: $pub" "$base/reads/reads?$query&encryptionScheme=C4GH")
# The server's CPU time (user + system) over 20 more tickets: what a
# busy machine does not inflate as it does wall time.
cpu() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
c0=$(cpu)
for _ in $(seq 20); do
	curl -sf -o /dev/null -H "Htsget-Context-Public-Key: $pub" "$base/reads/reads?$query&encryptionScheme=C4GH"
done
ticket_cpu=$((($(cpu) - c0) * 1000000 / $(getconf CLK_TCK) / 20))
start=$(best sh -c "'$c4gh' --version > /dev/null")
index=$(best sh -c "'$c4gh' decrypt --sk me.sec -i src/reads.bam.bai.c4gh > /dev/null")
index=$((index > start ? index - start : 0))

# The plaintext ticket of the whole file: one data URL, one range.
curl -sf "$base/reads/reads" >plain.json
purl=$(jq -r '.htsget.urls[0].url' plain.json)
prange=$(jq -r '.htsget.urls[0].headers.Range' plain.json)
plen=$(($(sed 's/bytes=[0-9]*-//' <<<"$prange") + 1))
served_plain=$(bestcurl -H "Range: $prange" "$purl")
decrypt_range=$(best sh -c "'$c4gh' decrypt --sk me.sec --range 0-$plen -i src/reads.bam.c4gh > /dev/null")

# The Crypt4GH ticket of the whole file: its body is one range.
curl -sf -H "Htsget-Context-Public-Key: $pub" "$base/reads/reads?encryptionScheme=C4GH" >c4gh.json
curl_url=$(jq -r '[.htsget.urls[] | select(.url | startswith("http"))] | last | .url' c4gh.json)
crange=$(jq -r '[.htsget.urls[] | select(.url | startswith("http"))] | last | .headers.Range' c4gh.json)
clen=$(awk -F'[=-]' '{ print $3 - $2 + 1 }' <<<"$crange")

# The ceiling: the same range of the same file from plain static file
# servers, to the same client.
./fileserve src 2>fileserve.log &
others+=($!)
fbase=$(address fileserve)
nurl=
if command -v nginx >/dev/null; then
	mkdir ngx
	for _ in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 40000))
		cat >ngx/nginx.conf <<EOF
daemon off;
master_process off;
error_log $tmp/ngx/error.log;
pid $tmp/ngx/nginx.pid;
events { worker_connections 64; }
http {
	access_log off;
	sendfile on;
	tcp_nopush on;
	client_body_temp_path $tmp/ngx/body;
	proxy_temp_path $tmp/ngx/proxy;
	fastcgi_temp_path $tmp/ngx/fastcgi;
	uwsgi_temp_path $tmp/ngx/uwsgi;
	scgi_temp_path $tmp/ngx/scgi;
	server { listen 127.0.0.1:$port; root $tmp/src; }
}
EOF
		nginx -c "$tmp/ngx/nginx.conf" -p "$tmp/ngx" 2>/dev/null &
		npid=$!
		for _ in $(seq 40); do
			curl -sf -o /dev/null -r 0-0 "http://127.0.0.1:$port/reads.bam.c4gh" && break
			kill -0 "$npid" 2>/dev/null || break
			sleep 0.05
		done
		if kill -0 "$npid" 2>/dev/null; then
			others+=("$npid")
			nurl=http://127.0.0.1:$port/reads.bam.c4gh
			break
		fi
	done
fi

# The plain read is curl's of the file itself (file://), so that the
# ratio is the server's cost and not the client's; cat's is shown too.
# They take turns, so that other load on the machine falls on all.
served_c4gh= read_file= static_go= static_nginx=
low() { if [[ -z ${!1} || $2 -lt ${!1} ]]; then printf -v "$1" %s "$2"; fi; }
for _ in $(seq "$RUNS"); do
	low served_c4gh "$(RUNS=1 bestcurl -H "Range: $crange" "$curl_url")"
	low read_file "$(RUNS=1 bestcurl "file://$tmp/src/reads.bam.c4gh")"
	low static_go "$(RUNS=1 bestcurl -H "Range: $crange" "$fbase/reads.bam.c4gh")"
	[[ -z $nurl ]] || low static_nginx "$(RUNS=1 bestcurl -H "Range: $crange" "$nurl")"
done
: "${static_nginx:=0}"
read_cat=$(best sh -c "cat src/reads.bam.c4gh > /dev/null")
size=$(stat -c %s src/reads.bam.c4gh)

printf 'serve: a %d MiB BAM on a local folder, region %s\n' "$((size >> 20))" "$query"
awk -v cold="$cold" -v tc="$ticket_cpu" -v cat="$read_cat" -v t="$ticket" -v i="$index" -v sp="$served_plain" -v dr="$decrypt_range" -v sc="$served_c4gh" -v rf="$read_file" -v n="$plen" -v cn="$clen" -v sg="$static_go" -v sn="$static_nginx" 'BEGIN {
	printf "  C4GH ticket        %.1f ms; budget 20 ms + %.1f ms of index read: %s\n", t / 1000, i / 1000, (t <= 20000 + i) ? "within" : "OVER"
	printf "  C4GH ticket, cold  %.1f ms (the index read anew): %s\n", cold / 1000, (cold <= 20000 + i) ? "within" : "OVER"
	printf "  C4GH ticket CPU    %.1f ms of server CPU time a ticket\n", tc / 1000
	printf "  data, plaintext    %.2f of decrypt --range of the same bytes (%.0f MiB/s served)\n", dr / sp, n / 1048576 / (sp / 1e6)
	printf "  data, C4GH         %.2f of a plain read of the file by curl (%.0f MiB/s served; cat reads %.0f MiB/s)\n", rf / sc, cn / 1048576 / (sc / 1e6), cn / 1048576 / (cat / 1e6)
	printf "  ceiling, Go        %.2f of a plain read by curl: net/http FileServer, the same range (%.0f MiB/s); serve is %.2f of it\n", rf / sg, cn / 1048576 / (sg / 1e6), sg / sc
	if (sn > 0)
		printf "  ceiling, nginx     %.2f of a plain read by curl: nginx, sendfile on, the same range (%.0f MiB/s); serve is %.2f of it\n", rf / sn, cn / 1048576 / (sn / 1e6), sn / sc
}'
