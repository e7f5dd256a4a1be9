package outfile

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// The process may be interrupted at any moment: by Ctrl-C (SIGINT), by
// kill (SIGTERM), by a closed terminal (SIGHUP) or by Ctrl-\ (SIGQUIT). On
// each of them the temporary files of uncommitted outputs are removed, the
// terminal is restored if a passphrase prompt had changed it, and the
// process exits with 128 + the signal number.
//
// SIGPIPE is caught too, but ends nothing by itself: once it is caught, a
// write to a pipe or socket whose reader went away fails with EPIPE, on
// every file descriptor. A connection to an object store that the server
// reset is then one more failed request, retried as the others, instead of
// the end of the process; and a stdout whose reader left ("crypt4gh … |
// head -1") fails the command's next write, which ends it through the
// usual path (outputs removed) with 128 + SIGPIPE and no message.

// Signals holds what to undo when the process is interrupted: one for the
// process, as its signals are.
var Signals = &Interrupts{files: map[string]bool{}, hooks: map[int]func(){}, caught: make(chan struct{})}

// Interrupts is the cleanup on signals: the files to remove and the hooks
// to run.
type Interrupts struct {
	mu    sync.Mutex
	files map[string]bool
	hooks map[int]func()
	next  int
	once  sync.Once
	ch    chan os.Signal
	// caught is closed once the handler holds mu: from then on nothing
	// is created or forgotten, and every hook runs. A test that must act
	// after that (and not after a guessed delay) waits for it.
	caught chan struct{}
}

// catchSignals are the signals after which the process cleans up and
// exits.
var catchSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// Arm installs, once, the handler for catchSignals.
func (t *Interrupts) Arm() {
	t.once.Do(func() {
		c := make(chan os.Signal, 4) // room for SIGPIPEs before the one that ends the run
		t.ch = c
		signal.Notify(c, append(catchSignals, syscall.SIGPIPE)...)
		go func() {
			sig := <-c
			for sig == syscall.SIGPIPE {
				sig = <-c
			}
			t.mu.Lock() // held until exit: nothing new is created
			close(t.caught)
			for _, h := range t.hooks {
				h()
			}
			for n := range t.files {
				os.Remove(n)
			}
			fmt.Fprintf(os.Stderr, "crypt4gh: error: interrupted (%v)\n", sig)
			os.Exit(128 + int(sig.(syscall.Signal)))
		}()
	})
}

// Create makes a new file as os.OpenFile(name, O_CREATE|O_EXCL|O_RDWR,
// perm) does and records it for removal. The handler is installed first and
// the file is created under the lock the handler takes, so that a signal
// that arrives at any moment finds the file in the set.
func (t *Interrupts) Create(name string, perm os.FileMode) (*os.File, error) {
	t.Arm()
	t.mu.Lock()
	defer t.mu.Unlock()
	f, err := createNew(name, perm)
	if err != nil {
		return nil, err
	}
	t.files[name] = true
	return f, nil
}

// Forget stops tracking a file: it was committed or removed.
func (t *Interrupts) Forget(name string) {
	t.mu.Lock()
	delete(t.files, name)
	t.mu.Unlock()
}

// OnInterrupt runs fn if the process is interrupted before the returned
// function is called.
func (t *Interrupts) OnInterrupt(fn func()) (done func()) {
	t.Arm()
	t.mu.Lock()
	id := t.next
	t.next++
	t.hooks[id] = fn
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		delete(t.hooks, id)
		t.mu.Unlock()
	}
}

// Stop hands the signals back, for a command that handles them itself
// from now on (mount unmounts on SIGINT and SIGTERM). Nothing may be
// recorded for Signals after it.
func (t *Interrupts) Stop() {
	t.Arm()
	signal.Stop(t.ch)
}

// Caught is closed once a signal was taken and the cleanup holds its
// lock: a test that must act after that waits for it.
func (t *Interrupts) Caught() <-chan struct{} { return t.caught }
