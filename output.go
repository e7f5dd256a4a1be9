package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/term"
)

// output is where a command writes its result: stdout, or a file that is
// written under a temporary name in the target folder and renamed into
// place by commit, only once everything succeeded. An existing device or
// named pipe (/dev/null, /dev/stdout on a pipe, a FIFO) is written in
// place instead: there is nothing to replace, and a rename would destroy it.
type output struct {
	io.Writer
	path string   // final path; "" for stdout
	tmp  *os.File // the temporary file, until commit or abort
	dev  *os.File // a device or named pipe written in place
	// reserved: blocks may be reserved past what was written (preallocate),
	// to be released by commit.
	reserved bool
}

// preallocate reserves room for n bytes when the output is a new file and
// n > 0, so that the writes cost less (see preallocate_linux.go). The size
// of the file still grows only as it is written; commit releases whatever
// was reserved and not written, if n was an overestimate.
func (o *output) preallocate(n int64) {
	if o.tmp != nil && n > 0 && preallocate(o.tmp, n) {
		o.reserved = true
	}
}

// outputOptions says how an output may be created.
type outputOptions struct {
	force  bool        // replace an existing file
	binary bool        // refuse to write to a terminal unless path is "-"
	mode   os.FileMode // permissions of a created file
	input  *os.File    // the input, which the output must not be
}

// openOutput opens path for writing ("" or "-" is stdout).
func openOutput(path string, stdout io.Writer, opts outputOptions) (*output, error) {
	if path == "" || path == "-" {
		if opts.binary && path == "" && isTerminal(stdout) {
			return nil, withHint(usagef("refusing to write binary data to a terminal"),
				"use -o FILE, or -o - to write to the terminal anyway")
		}
		return &output{Writer: stdout}, nil
	}
	target := path
	if fi, err := os.Stat(path); err == nil {
		if opts.input != nil {
			if in, err := opts.input.Stat(); err == nil && os.SameFile(fi, in) {
				return nil, usagef("output file %q is the input file", path)
			}
		}
		if fi.IsDir() {
			return nil, usagef("output %q is a directory", path)
		}
		if !fi.Mode().IsRegular() {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				return nil, fmt.Errorf("failed to open output: %w", err)
			}
			return &output{Writer: f, path: path, dev: f}, nil
		}
		if !opts.force {
			return nil, withHint(usagef("output file %q already exists", path), "use --force to replace it")
		}
		// Through a symbolic link, replace the file it points to, not
		// the link.
		if target, err = filepath.EvalSymlinks(path); err != nil {
			return nil, fmt.Errorf("failed to resolve output: %w", err)
		}
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	tmp, err := cleanup.create(dir, "."+base+".partial-*")
	if err != nil {
		// The temporary name means nothing to the user: name the output.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("failed to create output %s: %w", path, err)
	}
	if err := tmp.Chmod(opts.mode); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		cleanup.remove(tmp.Name())
		return nil, fmt.Errorf("failed to create output %s: %w", path, err)
	}
	return &output{Writer: tmp, path: target, tmp: tmp}, nil
}

// commit moves a file output into place. It must be called only after
// everything was written successfully.
func (o *output) commit() error {
	if o.dev != nil {
		err := o.dev.Close()
		o.dev = nil
		if err != nil {
			return fmt.Errorf("failed to write %s: %w", o.path, err)
		}
		return nil
	}
	if o.tmp == nil {
		return nil
	}
	name := o.tmp.Name()
	var err error
	if o.reserved {
		// Truncating to the current size frees the blocks reserved past it.
		var fi os.FileInfo
		if fi, err = o.tmp.Stat(); err == nil {
			err = o.tmp.Truncate(fi.Size())
		}
	}
	if cerr := o.tmp.Close(); err == nil {
		err = cerr
	}
	o.tmp = nil
	if err == nil {
		err = os.Rename(name, o.path)
	}
	cleanup.remove(name)
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("failed to write %s: %w", o.path, err)
	}
	return nil
}

// abort removes a file output that was not committed (a device or named
// pipe is only closed). It is safe to call after commit.
func (o *output) abort() {
	if o.dev != nil {
		o.dev.Close()
		o.dev = nil
	}
	if o.tmp == nil {
		return
	}
	name := o.tmp.Name()
	o.tmp.Close()
	os.Remove(name)
	cleanup.remove(name)
	o.tmp = nil
}

// finish commits the output when err is nil and aborts it otherwise.
func (o *output) finish(err error) error {
	if err != nil {
		o.abort()
		return err
	}
	return o.commit()
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// cleanup holds the temporary files to remove if the process is
// interrupted.
var cleanup = &tempFiles{names: map[string]bool{}}

type tempFiles struct {
	mu    sync.Mutex
	names map[string]bool
	once  sync.Once
}

// create creates a temporary file as os.CreateTemp does and records it.
// The signal handler is installed first, and the file is created and
// recorded under the lock that the handler takes, so that a signal that
// arrives at any moment finds the file in the set.
func (t *tempFiles) create(dir, pattern string) (*os.File, error) {
	t.arm()
	t.mu.Lock()
	defer t.mu.Unlock()
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	t.names[f.Name()] = true
	return f, nil
}

// add records a temporary file made by the caller. Prefer create, which
// leaves no moment at which a signal would miss the file.
func (t *tempFiles) add(name string) {
	t.arm()
	t.mu.Lock()
	t.names[name] = true
	t.mu.Unlock()
}

// arm installs, once, the handler that removes the recorded files and
// exits on SIGINT, SIGTERM and SIGHUP.
func (t *tempFiles) arm() {
	t.once.Do(func() {
		c := make(chan os.Signal, 1)
		signal.Notify(c, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		go func() {
			sig := <-c
			t.mu.Lock()
			for n := range t.names {
				os.Remove(n)
			}
			fmt.Fprintf(os.Stderr, "crypt4gh: error: interrupted (%v)\n", sig)
			os.Exit(128 + int(sig.(syscall.Signal)))
		}()
	})
}

func (t *tempFiles) remove(name string) {
	t.mu.Lock()
	delete(t.names, name)
	t.mu.Unlock()
}

// openInput opens path for reading ("" or "-" is stdin). The caller must
// call the returned close function.
func openInput(path string, stdin io.Reader) (io.Reader, *os.File, func(), error) {
	if path == "" || path == "-" {
		f, _ := stdin.(*os.File)
		return stdin, f, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, nil, usagef("input file %q does not exist", path)
		}
		return nil, nil, nil, fmt.Errorf("failed to open input: %w", err)
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, nil, nil, usagef("input %q is a directory", path)
	}
	return f, f, func() { f.Close() }, nil
}
