package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/mount"
	"github.com/c4gh-go/crypt4gh/objstore"
	"github.com/urfave/cli/v2"
)

// mountOptions are the flags of mount.
type mountOptions struct {
	keyOptions
	store      storeOptions
	AllowOther bool
	DirectIO   bool
	Refresh    time.Duration
	Quiet      bool
}

func mountCommand(e *env) command {
	o := &mountOptions{}
	return command{Command: &cli.Command{
		Name:      "mount",
		Usage:     "show the decrypted files of a folder, read-only, at a mount point",
		ArgsUsage: "SOURCE MOUNTPOINT",
		Description: "Mounts a read-only view of SOURCE (a folder) at MOUNTPOINT: every NAME.c4gh\n" +
			"that --sk opens appears as NAME, decrypted as it is read; other files appear\n" +
			"as they are. Nothing decrypted is written to disk. Files for other keys are\n" +
			"left out and named once on stderr; a damaged segment makes the read that\n" +
			"needs it fail (EIO). Folders are listed again when their listing is older\n" +
			"than --dir-cache-time, and a file that changed is read as it is now when it\n" +
			"is next opened. Runs in the foreground until Ctrl-C, SIGTERM or\n" +
			"fusermount3 -u MOUNTPOINT. Linux only (FUSE)." + mountObjectsHelp,
		Flags: append([]cli.Flag{
			skFlag(&o.SK),
			senderFlag(&o.Sender),
			&cli.BoolFlag{Name: "allow-other", Usage: "let other users read the mount (needs user_allow_other in /etc/fuse.conf)", Destination: &o.AllowOther},
			&cli.BoolFlag{Name: "direct-io", Usage: "serve the decrypted files around the page cache, in large reads with read-ahead: a first read costs less CPU, a second one decrypts again", Destination: &o.DirectIO},
			&cli.DurationFlag{Name: "dir-cache-time", Value: time.Minute, Usage: "how long a folder's listing is kept before it is read again (0: for as long as it is mounted)", Destination: &o.Refresh},
			passphraseFileFlag(&o.PassphraseFile), quietFlag(&o.Quiet, false),
		}, o.store.flags()...),
		Action: func(c *cli.Context) error { return mountAction(e.start(c, o.Quiet, &o.store), o) },
	}, page: page{
		env:      withAWS(secretKeyEnv, passphraseEnv),
		examples: []string{"crypt4gh mount --sk bob.sec /data/enc ~/plain &", "samtools view ~/plain/reads.bam chr1:100000-200000"},
	}}
}

func mountAction(e *env, o *mountOptions) error {
	if err := e.flagsFirst(); err != nil {
		return err
	}
	if len(e.args) != 2 {
		return usagef("mount needs SOURCE and MOUNTPOINT, got %s", plural(int64(len(e.args)), "argument"))
	}
	source, mountpoint := e.args[0], e.args[1]
	if o.Refresh < 0 {
		return usagef("--dir-cache-time %v is negative", o.Refresh)
	}
	paths := []string{source, mountpoint}
	var src mount.Source
	if objstore.IsURL(source) {
		var err error
		if src, err = e.objectSource(source); err != nil {
			return err
		}
		paths = paths[1:]
	} else {
		src = mount.Dir(source)
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if errors.Is(err, syscall.ENOTCONN) && p == mountpoint {
			// A FUSE mount whose server is gone.
			return withHint(usagef("%s is a stale mount (%v)", quoteName(p), pathErr(err)), "unmount it first: fusermount3 -u %s", p)
		}
		if err != nil {
			return usagef("%s: %v", quoteName(p), pathErr(err))
		}
		if !fi.IsDir() {
			return usagef("%s is not a folder", quoteName(p))
		}
	}
	if !objstore.IsURL(source) {
		if err := apart(source, mountpoint); err != nil {
			return err
		}
	}
	if outfile.MountedOn(mountpoint) {
		return withHint(usagef("%s is a mount point already", quoteName(mountpoint)), "unmount it first (fusermount3 -u %s), or choose an empty folder", mountpoint)
	}
	sk, sender, err := readReaderKeys(e, o.keyOptions)
	if err != nil {
		return err
	}
	// Mount keeps a copy of the key, erased at unmount.
	defer sk.Zero()
	// From here on the signals unmount: the passphrase prompt is over.
	// They are caught before the mount exists, so that none can end the
	// process with the file system mounted; the command then ends with
	// 128 + the signal's number, as every command does.
	ctx, caught, release := e.takeSignals(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer release()
	srv, err := mount.Mount(src, mountpoint, mount.Options{
		Key: sk, Sender: sender, AllowOther: o.AllowOther, DirectIO: o.DirectIO, Log: e.stderr,
		Refresh: o.Refresh,
	})
	if err != nil {
		return err
	}
	spareProcs()
	if !e.quiet {
		top := plural(int64(srv.Top().Files), "file")
		if n := srv.Top().Folders; n > 0 {
			top += " and " + plural(int64(n), "folder")
		}
		fmt.Fprintf(e.stderr, "crypt4gh: mounted %s at %s: %s; Ctrl-C or fusermount3 -u %s to unmount\n",
			quoteName(source), quoteName(mountpoint), top, mountpoint)
	}
	if err := srv.Wait(ctx); err != nil {
		return err
	}
	sig, ok := caught()
	if !ok {
		return nil // unmounted from outside
	}
	fmt.Fprintf(e.stderr, "crypt4gh: unmounted %s (%v)\n", quoteName(mountpoint), sig)
	return quietExit(128 + int(sig))
}

// spareProcs raises GOMAXPROCS by as many goroutines as go-fuse keeps
// waiting in reads of /dev/fuse (GOMAXPROCS+1 of them at most, at least
// 3, sized when the mount is made). A goroutine waiting in a system call
// holds its P; with none left idle, the runtime's monitor takes them back
// every 20 µs and wakes threads that find nothing to do. For cold random
// reads on a 2-CPU machine that cost the mount a tenth of its CPU time
// (perf stat, six pairs in turns: 4 to 9 times the futex calls, 1.5 to
// 3 times the monitor's sleeps; docs/performance.md). Decrypting still runs on
// as many goroutines as there were Ps at the mount (mount sizes its
// pools then). A GOMAXPROCS that the user set is left alone.
func spareProcs() {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	n := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(n + min(max(n, 2), 16) + 1)
}

// takeSignals makes the signals sigs the command's own from here on,
// for a command that runs until one comes (SIGPIPE is ignored, and the
// process's cleanup handler stopped): ctx is cancelled at the first of
// them, and caught then returns it. The caller must call release.
func (e *env) takeSignals(sigs ...os.Signal) (ctx context.Context, caught func() (syscall.Signal, bool), release func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	signal.Ignore(syscall.SIGPIPE)
	e.cleanup.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan os.Signal, 1)
	go func() {
		select {
		case s := <-ch:
			got <- s
			cancel()
		case <-ctx.Done():
		}
	}()
	caught = func() (syscall.Signal, bool) {
		select {
		case s := <-got:
			sig, _ := s.(syscall.Signal)
			return sig, true
		default:
			return 0, false
		}
	}
	return ctx, caught, func() { signal.Stop(ch); cancel() }
}

// apart refuses a mount point that is the source folder, holds it or lies
// in it: the mount would read itself (a read waiting on the mount that
// serves it, for good) or show itself inside itself without end.
func apart(source, mountpoint string) error {
	src, err1 := filepath.EvalSymlinks(source)
	mp, err2 := filepath.EvalSymlinks(mountpoint)
	if err1 != nil || err2 != nil {
		return nil // the checks after say what is wrong
	}
	within := func(a, b string) bool { // a is b or lies in it
		rel, err := filepath.Rel(b, a)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	switch {
	case within(src, mp):
		return withHint(usagef("mount point %s holds the source %s", quoteName(mountpoint), quoteName(source)), "mount it on an empty folder elsewhere")
	case within(mp, src):
		return withHint(usagef("mount point %s is inside the source %s", quoteName(mountpoint), quoteName(source)), "mount it on an empty folder elsewhere")
	}
	return nil
}
