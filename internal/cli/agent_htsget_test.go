package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/c4gh-go/crypt4gh/htsget"
	"github.com/c4gh-go/crypt4gh/keys"
)

// TestHtsgetAgent: htsget inside an agent, without --sk: the ticket is
// asked for the agent's key and its header opened by the agent; the key
// file is not there to be read.
func TestHtsgetAgent(t *testing.T) {
	e := newHtsgetEnv(t)
	tk, want := e.editListTicket(t)
	e.serveTicket(tk)
	startAgent(t, map[string]*keys.SecretKey{"alice.sec": e.alice})
	if err := os.Remove(filepath.Join(e.dir, "alice.sec")); err != nil {
		t.Fatal(err)
	}
	mustRun(t, e.dir, "htsget", "--region", "chr1:1-100000", "-o", "out/region.bam", e.s.URL+"/reads/reads")
	sameBytes(t, "htsget through the agent", e.readOut(t, "region.bam"), want)
	if pk, err := htsget.ParsePublicKey(e.s.requests()[0].PublicKey); err != nil || pk != e.alice.Public() {
		t.Errorf("the ticket was asked for %v (%v), not the agent's key", pk, err)
	}
}
