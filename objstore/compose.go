package objstore

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// A Part is a piece of an object that Compose builds: either the bytes of
// Data, or Length bytes of Source from Offset.
type Part struct {
	Data   []byte
	Source *Object
	Offset int64
	Length int64
}

// Bytes returns a Part of the bytes b.
func Bytes(b []byte) Part { return Part{Data: b} }

// Range returns a Part of length bytes of src at off.
func Range(src *Object, off, length int64) Part {
	return Part{Source: src, Offset: off, Length: length}
}

// ComposeOptions tune Compose. The zero value gives the defaults.
type ComposeOptions struct {
	// Force replaces an existing object. Without it an existing object is
	// ErrExists, as for a Writer. The object being replaced may itself be
	// one of the sources: see Compose.
	Force bool
	// Concurrency is how many requests run at once (and how many part
	// buffers may be held); 0 means DefaultConcurrency.
	Concurrency int
	// CopyPartSize is the largest server-side copy in one request, at
	// least MinPartSize and at most MaxPartSize; 0 means
	// DefaultCopyPartSize. A range is copied in at least Concurrency
	// requests when each can have MinPartSize, and the copies end on
	// multiples of 1 MiB in the new object where they can.
	CopyPartSize int64
}

// DefaultCopyPartSize is the size of the server-side copies of Compose:
// large enough for few requests, small enough that each answers within a
// few seconds on a slow store.
const DefaultCopyPartSize = 256 << 20

// Compose writes the object bucket/key made of parts, in order. Ranges of
// objects opened with the same Client are copied by the server
// (UploadPartCopy, pinned to the source's ETag with CopySourceIfMatch, so a
// changed source is ErrChanged), and do not pass through the client; only
// Data, and the few MiB of sources needed to give every part but the last
// the MinPartSize that S3 requires, are sent. A result smaller than that is
// fetched and written with one PutObject. Ranges of other objects (web
// resources, another Client's) are fetched and sent.
//
// To rewrite an object in place, as when a file gets a new header: the
// destination may be one of the sources. The old object stays readable
// until the new one is committed, and the commit is made with If-Match on
// the ETag the source was opened with, so an object replaced meanwhile is
// not overwritten (where the server supports conditional writes); Force is
// not needed for that.
//
// On any failure the upload is aborted and the destination is unchanged.
func (c *Client) Compose(ctx context.Context, bucket, key string, parts []Part, opts *ComposeOptions) error {
	var opt ComposeOptions
	if opts != nil {
		opt = *opts
	}
	if opt.CopyPartSize == 0 {
		opt.CopyPartSize = DefaultCopyPartSize
	}
	if opt.CopyPartSize < MinPartSize || opt.CopyPartSize > MaxPartSize {
		return c.fail("compose", bucket, key, errkind.Errorf(errkind.Usage, "copy part size %d outside %d to %d", opt.CopyPartSize, MinPartSize, MaxPartSize))
	}
	var total int64
	ifMatch := ""
	for i, p := range parts {
		if p.Source == nil {
			total += int64(len(p.Data))
			continue
		}
		if p.Data != nil || p.Offset < 0 || p.Length < 0 || p.Offset > p.Source.size || p.Length > p.Source.size-p.Offset {
			return c.fail("compose", bucket, key, errkind.Errorf(errkind.Usage, "part %d: %s", i, describePart(p)))
		}
		total += p.Length
		if l := p.Source.loc; p.Source.client == c && l.Bucket == bucket && l.Key == key {
			ifMatch = p.Source.etag
		}
	}
	wopt := &WriterOptions{Force: opt.Force, Size: total, Concurrency: opt.Concurrency}
	if ifMatch != "" {
		wopt.IfMatch = ifMatch
	}
	w, u, err := c.newWriter(ctx, bucket, key, wopt, true)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if p.Source != nil && p.Source.client == c {
			// An upload with copies goes without checksums: the checksum
			// a store gives a copied part is not always one of the part
			// (versitygw gives that of the whole source), and a plain
			// multipart upload is what every S3 store supports. The
			// bytes sent are still covered by the request signature.
			u.checksum = false
		}
	}
	cp := composer{w: w, u: u, copyPart: opt.CopyPartSize}
	var at int64 // where the part goes in the new object
	for _, p := range parts {
		switch {
		case p.Source == nil:
			_, err = w.Write(p.Data)
			at += int64(len(p.Data))
			continue
		case p.Length == 0:
		case p.Source.client == c:
			err = cp.copyRange(p.Source, p.Offset, p.Length, at)
		default:
			err = cp.fetchRange(p.Source, p.Offset, p.Length)
		}
		if err != nil {
			w.Abort()
			return w.failure()
		}
		at += p.Length
	}
	return w.Close()
}

// A composer adds the ranges of a Compose to its Writer: the bytes it
// must send through the Writer's parts, the copies as parts of the S3
// upload.
type composer struct {
	w        *Writer
	u        *s3Upload
	copyPart int64 // the largest copy
}

func describePart(p Part) string {
	if p.Data != nil {
		return "both Data and Source"
	}
	return fmt.Sprintf("range of %d bytes at %d outside %s of %d bytes", p.Length, p.Offset, p.Source.loc, p.Source.size)
}

// fetchRange writes n bytes of src at off through the client.
func (cp composer) fetchRange(src *Object, off, n int64) error {
	w := cp.w
	r, err := src.NewReader(off, n, &ReaderOptions{Concurrency: max(1, w.concurrency/2)})
	if err != nil {
		return w.fail(err)
	}
	defer r.Close()
	if _, err := r.WriteTo(w); err != nil {
		return w.fail(err)
	}
	return nil
}

// copyAlign is where the server-side copies of a range end in the new
// object when they can: on multiples of 1 MiB. A store that assembles the
// parts of an upload on a file system that shares blocks (versitygw's
// copy_file_range on XFS or Btrfs) then shares them instead of copying
// every byte once more.
const copyAlign = 1 << 20

// copyRange adds n bytes of src at off to the object, where they begin at
// offset at. Whatever the Writer holds must first grow to MinPartSize,
// from the head of the range; the rest is copied by the server in parts
// of about copyPart bytes, at least as many as run at once when each can
// have MinPartSize, or fetched when it is too small for a part of its
// own.
func (cp composer) copyRange(src *Object, off, n, at int64) error {
	w := cp.w
	if w.closed {
		return w.closedErr()
	}
	if held := w.pool.filled(); held > 0 && held < MinPartSize {
		m := min(MinPartSize-held, n)
		if err := cp.fill(src, off, m); err != nil {
			return err
		}
		off, n, at = off+m, n-m, at+m
	}
	if n == 0 {
		return nil
	}
	if w.pool.filled() > 0 {
		if err := w.flush(); err != nil {
			return w.fail(err)
		}
	}
	if n < MinPartSize {
		return cp.fill(src, off, n)
	}
	sizes := copySizes(at, n, cp.copyPart, w.concurrency, int64(MaxParts-w.next+1))
	if sizes == nil {
		return w.fail(&detailed{sentinel: ErrTooLarge, detail: fmt.Sprintf("more than %d parts", MaxParts)})
	}
	for _, size := range sizes {
		if err := cp.copy(src, off, size); err != nil {
			return w.fail(err)
		}
		off += size
	}
	return nil
}

// copySizes cuts n bytes (at least MinPartSize) that begin at offset at
// in the new object into the sizes of at most maxCopies server-side
// copies: copies of at most copyPart bytes (larger when maxCopies
// requires it, and up to twice MinPartSize when copyPart is less than
// that), but as many as run at once (concurrency) at least, as far as each
// can have MinPartSize (a copy is one stream that the server reads,
// checksums and writes: a range in one copy would keep one core of the
// server busy). Every copy but the last ends on a multiple of copyAlign
// in the new object unless that makes it smaller than MinPartSize; none
// is larger than MaxPartSize. It returns nil when maxCopies copies cannot
// hold n bytes.
func copySizes(at, n, copyPart int64, concurrency int, maxCopies int64) []int64 {
	const largest = MaxPartSize - copyAlign - 1 // room to move an end
	limit := min(copyPart, largest)
	if maxCopies < 1 || (n+maxCopies-1)/maxCopies > largest {
		return nil
	}
	if (n+limit-1)/limit > maxCopies {
		limit = (n + maxCopies - 1) / maxCopies
	}
	k := max((n+limit-1)/limit, int64(concurrency))
	k = min(k, n/MinPartSize, maxCopies)
	sizes := make([]int64, 0, k)
	end := at
	for i := int64(1); i <= k; i++ {
		// The even share of the range, i*n/k, moved down to a multiple of
		// copyAlign.
		start := end
		end = at + n/k*i + n%k*i/k
		if a := end / copyAlign * copyAlign; i < k && a-start >= MinPartSize {
			end = a
		}
		sizes = append(sizes, end-start)
	}
	return sizes
}

// fill writes n bytes (at most MinPartSize) of src at off, fetched
// through the client with one request, to the Writer.
func (cp composer) fill(src *Object, off, n int64) error {
	w := cp.w
	b := make([]byte, n)
	if err := src.fetch(w.wctx, off, b); err != nil {
		return w.fail(err)
	}
	_, err := w.Write(b)
	return err
}

// copy makes the server copy size bytes of src at off as the next part.
func (cp composer) copy(src *Object, off, size int64) error {
	return cp.w.sendPart(func(ctx context.Context, n int32) (donePart, error) {
		return cp.u.copyPart(ctx, n, src, off, size)
	})
}

// copyPart makes the server copy size bytes of src at off as part n of
// the upload, pinned to the ETag src was opened with.
func (u *s3Upload) copyPart(ctx context.Context, n int32, src *Object, off, size int64) (donePart, error) {
	in := &s3.UploadPartCopyInput{
		Bucket: &u.bucket, Key: &u.key, UploadId: u.uploadID, PartNumber: &n,
		CopySource:      aws.String(copySource(src.loc.Bucket, src.loc.Key)),
		CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+size-1)),
	}
	if src.etag != "" {
		in.CopySourceIfMatch = aws.String(src.etag)
	}
	out, err := u.c.s3.UploadPartCopy(ctx, in, u.c.slowOp)
	if err != nil {
		if precondition(err) {
			err = &detailed{sentinel: ErrChanged, detail: src.loc.String() + " is no longer " + src.etag, cause: err}
		}
		return donePart{}, err
	}
	part := donePart{n: n}
	if r := out.CopyPartResult; r != nil {
		part.etag = aws.ToString(r.ETag)
	}
	return part, nil
}

// copySource is the x-amz-copy-source of bucket/key: URL-encoded, with
// the slashes kept.
func copySource(bucket, key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		// PathEscape keeps "+", which stores decode as a space (a key
		// "a+b" would be copied from "a b").
		segs[i] = strings.ReplaceAll(url.PathEscape(s), "+", "%2B")
	}
	return bucket + "/" + strings.Join(segs, "/")
}

var _ io.Writer = (*Writer)(nil)
