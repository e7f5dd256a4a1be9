package agent

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ConfirmOnTerminal asks on the terminal of this process (/dev/tty)
// whether the process p may use the key k, for [Agent.Confirm]: only "y"
// or "yes" allows it, and no terminal refuses.
func ConfirmOnTerminal(p Peer, k KeyInfo) bool {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer tty.Close()
	fmt.Fprintf(tty, "crypt4gh agent: allow %s to use the key %s? [y/N] ", p.describe(), strconv.Quote(k.Name))
	line, _ := bufio.NewReader(tty).ReadString('\n')
	line = strings.ToLower(strings.TrimSpace(line))
	return line == "y" || line == "yes"
}

// describe names a process by its id and command line (printable
// characters only, at most 120).
func (p Peer) describe() string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
	if err != nil || len(b) == 0 {
		return fmt.Sprintf("process %d", p.PID)
	}
	b = []byte(strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " ")))
	cmd := printable(b[:min(len(b), 120)])
	return fmt.Sprintf("process %d (%s)", p.PID, cmd)
}
