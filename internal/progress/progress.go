// Package progress draws the progress bar of a long command on a
// terminal's stderr: bytes read, the rate and the time left, redrawn
// every Interval from an atomic counter, so that the readers it wraps
// cost one atomic add a read. A nil *Bar is valid and does nothing.
package progress

import (
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/c4gh-go/crypt4gh/internal/outfile"
)

// Interval is how often the bar is redrawn (a variable for the tests).
// An operation that ends sooner prints nothing.
var Interval = 150 * time.Millisecond

// Bar shows on stderr how many input bytes were read, with the rate and
// the time left. The readers that it wraps only add to an atomic counter;
// a goroutine redraws the bar every Interval. A nil *Bar is valid and
// does nothing, so that callers need no checks.
type Bar struct {
	w     io.Writer
	total int64
	n     atomic.Int64

	mu    sync.Mutex // serialises drawing with the messages printed between draws
	bar   *progressbar.ProgressBar
	shown bool // something was drawn: the line must be cleared or ended

	started   bool
	startedAt time.Time
	stopOnce  sync.Once
	unhook    func()
	quit      chan struct{}
	done      chan struct{}
}

// New returns a bar for total input bytes drawn on stderr, or nil when
// there is nothing to show: an unknown or zero size, or a stderr that is
// not the *os.File of a terminal (a pipe, a file, a CI log). It does not
// draw anything before Start is called.
func New(stderr io.Writer, total int64, description string) *Bar {
	if total <= 0 || !outfile.IsTerminal(stderr) {
		return nil
	}
	p := &Bar{w: stderr, total: total, quit: make(chan struct{}), done: make(chan struct{})}
	p.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription(description),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionSetWidth(30), // narrowed to fit a narrow terminal
		progressbar.OptionSpinnerType(14),
	)
	return p
}

// Reader returns r, counting the bytes read from it.
func (p *Bar) Reader(r io.Reader) io.Reader {
	if p == nil {
		return r
	}
	return &countingReader{r: r, n: &p.n}
}

// Start begins drawing, every Interval, until Stop. It must be
// called at most once, from the goroutine that calls Stop.
func (p *Bar) Start() {
	if p == nil || p.started {
		return
	}
	p.started, p.startedAt = true, time.Now()
	p.bar.StartWithoutRender() // the clock of the rate and the time left
	// Interrupted, the message goes on a line of its own.
	p.unhook = outfile.Signals.OnInterrupt(func() {
		p.mu.Lock()
		if p.shown {
			io.WriteString(p.w, "\n")
		}
		p.mu.Unlock()
	})
	go func() {
		defer close(p.done)
		t := time.NewTicker(Interval)
		defer t.Stop()
		for {
			select {
			case <-p.quit:
				return
			case <-t.C:
				p.mu.Lock()
				p.shown = true
				p.bar.Set64(min(p.n.Load(), p.total))
				p.mu.Unlock()
			}
		}
	}()
}

// Stop ends the display. When the bar was drawn (or could have been), it
// is drawn a last time with the final count and the line is ended, so
// that what follows (an error message, the shell prompt) starts on a line
// of its own. stop may be called more than once, and without Start.
func (p *Bar) Stop() {
	if p == nil {
		return
	}
	p.stopOnce.Do(func() {
		if p.unhook != nil {
			p.unhook()
		}
		close(p.quit)
		if p.started {
			<-p.done
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		// A tick may not have been served yet on a busy machine: what
		// lasted longer than Interval shows its end anyway.
		if p.shown || (p.started && time.Since(p.startedAt) >= Interval) {
			p.bar.Set64(min(p.n.Load(), p.total))
			io.WriteString(p.w, "\n")
		}
	})
}

// Print runs fn, which writes a line on a terminal, with the bar line
// cleared first; the next tick draws the bar again below it.
func (p *Bar) Print(fn func()) {
	if p == nil {
		fn()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		p.bar.Clear()
	}
	fn()
}

// countingReader adds the number of bytes read to n.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// copyChunk is how much WriteTo hands to the kernel at a time between
// two updates of the count.
const copyChunk = 16 << 20

// WriteTo keeps io.Copy from a file to a file in the kernel
// (copy_file_range, sendfile) as it is without the count: the copy is
// made in chunks of copyChunk bytes through the destination's ReadFrom,
// which sees an *io.LimitedReader of the *os.File.
func (c *countingReader) WriteTo(w io.Writer) (int64, error) {
	f, isFile := c.r.(*os.File)
	rf, isReaderFrom := w.(io.ReaderFrom)
	if !isFile || !isReaderFrom {
		return io.Copy(w, struct{ io.Reader }{c})
	}
	var total int64
	for {
		n, err := rf.ReadFrom(&io.LimitedReader{R: f, N: copyChunk})
		total += n
		c.n.Add(n)
		if err != nil || n < copyChunk {
			return total, err
		}
	}
}
