package region

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
)

// oracle installs the npm packages of testdata/oracle (the GMOD readers of
// BAI, CSI, TBI and CRAI) into a cache folder outside the module, once,
// and returns that folder. Test binaries of other checkouts may use the
// folder at the same time: they take turns (a lock of the folder), and a
// script is replaced (renamed over, never rewritten in place) only when it
// changed, so that none reads a script or a package half written.
func oracle(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("the npm oracle installs packages: not in -short")
	}
	clitest.Tool(t, "node")
	npm := clitest.Tool(t, "npm")
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "crypt4gh-tests", "region-oracle")
	unlock, err := clitest.LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	pkg, err := os.ReadFile(filepath.Join("testdata", "oracle", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(filepath.Join(dir, "package.json"))
	_, statErr := os.Stat(filepath.Join(dir, "node_modules", "@gmod", "bam"))
	for _, script := range []string{"chunks.mjs", "count.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", "oracle", script))
		if err != nil {
			t.Fatal(err)
		}
		if have, _ := os.ReadFile(filepath.Join(dir, script)); bytes.Equal(have, b) {
			continue
		}
		tmp := filepath.Join(dir, "."+script+".tmp")
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, script)); err != nil {
			t.Fatal(err)
		}
	}
	if statErr == nil && bytes.Equal(old, pkg) {
		return dir
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), pkg, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--prefix", dir)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		clitest.Missing(t, "npm install of the oracle failed: %v\n%s", err, out)
	}
	return dir
}

// oracleQuery is one region as chunks.mjs takes it.
type oracleQuery struct {
	Data  string `json:"data,omitempty"`
	Index string `json:"index,omitempty"`
	Ref   int    `json:"ref"`
	Name  string `json:"name"`
	Start int64  `json:"start"`
	End   int64  `json:"end"`
}

// askOracle runs the script (chunks.mjs or count.mjs) with the request req
// and returns its answer for each query.
func askOracle(t *testing.T, dir, script string, req map[string]any, qs []oracleQuery) []json.RawMessage {
	t.Helper()
	req["queries"] = qs
	body, _ := json.Marshal(req)
	cmd := exec.Command("node", filepath.Join(dir, script))
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("oracle: %v\n%s", err, stderr.String())
	}
	var res []json.RawMessage
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(qs) {
		t.Fatalf("oracle answered %q: %v", out, err)
	}
	return res
}

// TestOracle checks that the plans cover the chunks (or containers) that
// the GMOD readers, which share no code with biogo/hts, compute for the
// same regions.
func TestOracle(t *testing.T) {
	npmDir := oracle(t)
	dir := fixtures(t)
	for _, fx := range []struct{ data, index, kind string }{
		{"reads.bam", "reads.bam.bai", "bai"},
		{"csi.bam", "csi.bam.csi", "bamcsi"},
		{"reads.cram", "reads.cram.crai", "crai"},
		{"calls.vcf.gz", "calls.vcf.gz.tbi", "tbi"},
		{"csi.vcf.gz", "csi.vcf.gz.csi", "vcfcsi"},
		{"bcftools.vcf.gz", "bcftools.vcf.gz.tbi", "tbi"},
	} {
		t.Run(fx.index, func(t *testing.T) {
			f := openFixture(t, dir, fx.data, fx.index)
			regions := []string{"chr1:1000-1100", "chr1:10,000-150,000", "chr2:1-1", "chr2", "chr1:5000-6000"}
			if f.Format() != VCF {
				regions = append(regions, "chr2:149901-150000", "{chr:3}:100-5000")
			}
			var qs []oracleQuery
			var plans []*Plan
			for _, s := range regions {
				r, _ := Parse(s)
				ts, err := f.resolve([]Region{r})
				if err != nil || len(ts) != 1 {
					t.Fatalf("%s: %v", s, err)
				}
				end := min(r.End, 1<<29)
				if f.hdr.lens != nil {
					end = min(end, f.hdr.lens[ts[0].ref]) // BAM: CSI binning may not reach further
				}
				qs = append(qs, oracleQuery{Ref: ts[0].ref, Name: f.Names()[ts[0].ref], Start: r.Start, End: end})
				p, err := f.Plan([]Region{r})
				if err != nil {
					t.Fatal(err)
				}
				plans = append(plans, p)
			}
			for i, ans := range askOracle(t, npmDir, "chunks.mjs", map[string]any{"kind": fx.kind, "index": filepath.Join(dir, fx.index)}, qs) {
				if fx.kind == "crai" {
					checkContainers(t, regions[i], plans[i], ans)
				} else {
					checkChunks(t, regions[i], f, plans[i], ans)
				}
			}
		})
	}
}

// checkChunks fails for an oracle chunk that the plan's spans miss.
func checkChunks(t *testing.T, region string, f *File, p *Plan, ans json.RawMessage) {
	t.Helper()
	var chunks [][4]int64
	if err := json.Unmarshal(ans, &chunks); err != nil {
		t.Fatal(err)
	}
	if len(chunks) == 0 {
		t.Errorf("%s: the oracle found no chunks", region)
	}
	for _, c := range chunks {
		s := span{voffset{c[0], c[1]}, voffset{c[2], c[3]}}
		if s.begin.less(f.hdr.end) {
			s.begin = f.hdr.end
		}
		if !s.begin.less(s.end) {
			continue
		}
		covered := false
		for _, ps := range gmodMerge(p.spans) {
			covered = covered || (!s.begin.less(ps.begin) && !ps.end.less(s.end))
		}
		if !covered {
			t.Errorf("%s: oracle chunk %v not in the plan %v", region, c, p.spans)
		}
	}
}

// checkContainers fails for an oracle container that the plan misses.
func checkContainers(t *testing.T, region string, p *Plan, ans json.RawMessage) {
	t.Helper()
	var offs []int64
	if err := json.Unmarshal(ans, &offs); err != nil {
		t.Fatal(err)
	}
	if len(offs) == 0 {
		t.Errorf("%s: the oracle found no containers", region)
	}
	for _, off := range offs {
		in := false
		for _, pc := range p.Pieces {
			in = in || (pc.Data == nil && pc.Start <= off && off < pc.End)
		}
		if !in {
			t.Errorf("%s: oracle container at %d not in the plan", region, off)
		}
	}
}

// gmodMerge merges spans as the GMOD readers merge the chunks they return
// (optimizeChunks: the next chunk starts less than 65000 bytes after the
// last one ends, and the two lie within 5 MB), so that their answers can be
// compared with a plan.
func gmodMerge(spans []span) []span {
	var out []span
	for _, s := range spans {
		if n := len(out); n > 0 && s.begin.file-out[n-1].end.file < 65000 && s.end.file-out[n-1].begin.file < 5000000 {
			if out[n-1].end.less(s.end) {
				out[n-1].end = s.end
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// TestOracleRecords checks, with the GMOD readers, that the output of a
// plan holds as many records of its regions as the source does.
func TestOracleRecords(t *testing.T) {
	npmDir := oracle(t)
	dir := fixtures(t)
	for _, fx := range []struct{ data, index, kind, ext string }{
		{"reads.bam", "reads.bam.bai", "bam", ".bam"},
		{"csi.bam", "csi.bam.csi", "bam", ".bam"},
		{"calls.vcf.gz", "calls.vcf.gz.tbi", "vcf", ".vcf.gz"},
		{"csi.vcf.gz", "csi.vcf.gz.csi", "vcf", ".vcf.gz"},
		{"bcftools.vcf.gz", "bcftools.vcf.gz.tbi", "vcf", ".vcf.gz"},
	} {
		t.Run(fx.index, func(t *testing.T) {
			f := openFixture(t, dir, fx.data, fx.index)
			regions := []string{"chr1:1000-1100", "chr1:10,000-150,000", "chr2:1-1", "chr2", "chr2:149901-150000"}
			idx := ".bai"
			src := "reads.bam" // the GMOD reader is given a BAI
			if fx.kind == "vcf" {
				regions[4] = "chr3:29000-200000"
				idx, src = ".tbi", fx.data
				if fx.data == "csi.vcf.gz" {
					src = "calls.vcf.gz" // the same records, with a TBI
				}
			}
			var want, got []oracleQuery
			for i, s := range regions {
				r, _ := Parse(s)
				out := "gmod" + string(rune('a'+i)) + fx.ext
				writeRegions(t, f, dir, out, []string{s})
				if fx.kind == "bam" {
					run(t, dir, "samtools", "index", out)
				} else {
					run(t, dir, "tabix", "-f", "-p", "vcf", out)
				}
				q := oracleQuery{Name: r.Name, Start: r.Start, End: min(r.End, 1<<29)}
				q.Data, q.Index = filepath.Join(dir, src), filepath.Join(dir, src+idx)
				want = append(want, q)
				q.Data, q.Index = filepath.Join(dir, out), filepath.Join(dir, out+idx)
				got = append(got, q)
			}
			wantN := askOracle(t, npmDir, "count.mjs", map[string]any{"kind": fx.kind}, want)
			gotN := askOracle(t, npmDir, "count.mjs", map[string]any{"kind": fx.kind}, got)
			for i, s := range regions {
				if string(gotN[i]) != string(wantN[i]) || string(wantN[i]) == "0" {
					t.Errorf("%s: the GMOD reader finds %s records in the output, %s in the source", s, gotN[i], wantN[i])
				}
			}
		})
	}
}
