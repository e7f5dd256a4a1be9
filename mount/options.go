package mount

import (
	"io"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
)

// Options configures [Mount].
type Options struct {
	// Key opens the headers: the reader's secret key, or another
	// [keys.Opener] such as a key agent's client; it is required. Mount
	// keeps a copy of a [*keys.SecretKey] in memory, erased with the data
	// keys of every file when the file system is unmounted: the caller may
	// erase its own once Mount has returned. Another opener is used as it
	// is, for each file whose header is opened, while the file system runs.
	Key keys.Opener
	// Sender, when not nil, is the only writer whose files are shown
	// decrypted: a Crypt4GH file written by another key is left out.
	Sender *keys.PublicKey
	// AllowOther lets every user of the machine read the plaintext: files
	// are then shown with mode 0444 and folders 0555 instead of 0400 and
	// 0500, and the mount is made with allow_other, which an unprivileged
	// user may ask for only when /etc/fuse.conf has user_allow_other.
	AllowOther bool
	// DirectIO serves the decrypted files around the kernel's page cache
	// (FOPEN_DIRECT_IO): every read reaches the mount, which decrypts it
	// again unless its own small cache or read-ahead holds it, and stat
	// reports blocks of 512 KiB, so that tools such as cat read that much
	// at a time. A file read once, from start to end, is then read
	// faster and with less CPU (no page cache to fill); a file read many
	// times, or the same parts again, is read slower. mmap of such a
	// file needs Linux 6.6 or later. Plain files of the source are
	// served through the page cache either way.
	DirectIO bool
	// Refresh, when not zero, is how long a folder's listing is kept: a
	// folder looked at after that is listed again, files that appeared are
	// shown, files that are gone go, and files that changed are shown as
	// they are now (their headers opened again; the unchanged ones are
	// not read again). A file that no process has open is also checked
	// when it is opened, through the Source's [Stater], so that a file
	// re-keyed or replaced since it was listed is read as it is now. The
	// kernel keeps names and attributes for Refresh too. Zero keeps every
	// listing while the file system is mounted: the source must not
	// change.
	Refresh time.Duration
	// Log receives one line for each entry of the source that is left out
	// and for each read error (once per damaged segment). Nil means
	// os.Stderr.
	Log io.Writer
}

// ErrNotSupported is returned by [Mount] on systems where this package
// cannot mount a file system: every system but Linux.
var ErrNotSupported = errkind.New(errkind.Other, "mounting is not supported on this system (it needs Linux and FUSE)")

var (
	errNoKey    = errkind.New(errkind.Usage, "no secret key")
	errNoSource = errkind.New(errkind.Usage, "no source")
)

// Shown counts the entries of a folder of the mount.
type Shown struct{ Files, Folders int }
