package objstore

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Limits of S3 multipart uploads.
const (
	// MinPartSize is the smallest part S3 accepts, but for the last one.
	MinPartSize = 5 << 20
	// MaxPartSize is the largest part S3 accepts.
	MaxPartSize int64 = 5 << 30
	// MaxParts is how many parts an upload may have.
	MaxParts = 10000
)

// DefaultPartSize is the part size of a Writer when WriterOptions say
// none: with DefaultConcurrency parts, 128 MiB.
const DefaultPartSize = 16 << 20

// WriterOptions tune a Writer. The zero value gives the defaults.
type WriterOptions struct {
	// Force replaces an existing object. Without it an existing object is
	// ErrExists: NewWriter checks before the upload (so that a long
	// upload does not run for nothing), and the upload is committed with
	// If-None-Match: * so that an object written meanwhile is not
	// replaced either, on servers that support conditional writes (AWS
	// S3 and versitygw do; elsewhere only the check before protects it).
	Force bool

	// IfMatch, when set, replaces only the object with this ETag (and
	// implies Force): the commit fails with ErrChanged if it was
	// replaced meanwhile, on servers that support conditional writes.
	IfMatch string

	// Size is the number of bytes that will be written, if known (0 means
	// unknown). The part size grows with it so that no object needs more
	// than MaxParts parts.
	Size int64

	// PartSize is the size of each part but the last, at least
	// MinPartSize; 0 means DefaultPartSize. For an unknown Size the part
	// size doubles every 1,000 parts, so that a stream of up to 16 TB
	// fits at the default.
	PartSize int64

	// Concurrency is how many part buffers the Writer holds at once,
	// being filled or being sent; 0 means DefaultConcurrency.
	Concurrency int

	// Memory is the most bytes the part buffers hold; 0 means
	// Concurrency × PartSize (the PartSize asked for, before it grows
	// with Size). Parts so large that two of them do not fit in it (a
	// known Size over 5,000 × Memory, or a long stream whose parts grew)
	// are written to temporary files in SpoolDir instead of memory, two
	// at once (one filled while one is sent; one when Concurrency is 1):
	// memory stays within Memory whatever the size of the object, and
	// the disk holds two parts at most.
	Memory int64

	// SpoolDir is the folder of those temporary files; "" means
	// os.TempDir(). Each is removed as soon as it is created (where the
	// system allows it, otherwise once its part is sent), so that none
	// is left behind, not even by a process killed with SIGKILL. A
	// folder in which NewWriter cannot create a file is not used: the
	// parts are then held in memory, two at least, above Memory.
	SpoolDir string

	// Keep leaves a multipart upload that was begun pending when the
	// Writer fails or is aborted, instead of aborting it, so that
	// [Client.ResumeWriter] can go on with its parts. The caller then
	// owns the pending upload: it holds storage until it is completed or
	// aborted ([Client.AbortUpload]).
	Keep bool
}

// NewWriter returns a Writer of the object bucket/key. Without
// opts.Force or opts.IfMatch it reports an existing object as ErrExists.
// The context governs every request of the upload but the abort, which
// runs even when the context is canceled.
func (c *Client) NewWriter(ctx context.Context, bucket, key string, opts *WriterOptions) (*Writer, error) {
	w, _, err := c.newWriter(ctx, bucket, key, opts, false)
	return w, err
}

// newWriter is NewWriter, and also returns the S3 side of the upload;
// small says that the bytes will come in small pieces between server-side
// copies (Compose), never to be spooled.
func (c *Client) newWriter(ctx context.Context, bucket, key string, opts *WriterOptions, small bool) (*Writer, *s3Upload, error) {
	if key == "" || key[len(key)-1] == '/' {
		return nil, nil, c.fail("write", bucket, key, &detailed{sentinel: ErrInvalidURL, detail: "a prefix, not an object"})
	}
	opt, err := writerOptions(opts)
	if err != nil {
		return nil, nil, c.fail("write", bucket, key, err)
	}
	if opt.IfMatch != "" {
		opt.Force = true
	}
	if !opt.Force {
		if err := c.checkAbsent(ctx, bucket, key); err != nil {
			return nil, nil, c.fail("write", bucket, key, err)
		}
	}
	u := &s3Upload{c: c, bucket: bucket, key: key, force: opt.Force, ifMatch: opt.IfMatch, checksum: c.checksum}
	return newWriter(ctx, u, opt, small), u, nil
}

// checkAbsent returns ErrExists if bucket/key exists, ErrNoBucket if the
// bucket does not. A refusal to say (403: S3 answers so when the caller
// may not list the bucket) is not an error: the conditional commit still
// protects the object where the server supports it.
func (c *Client) checkAbsent(ctx context.Context, bucket, key string) error {
	_, err := c.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err == nil {
		return ErrExists
	}
	switch statusOf(err) {
	case http.StatusNotFound:
		err = c.notFound(ctx, bucket, err)
		if errors.Is(err, ErrNoBucket) || errors.Is(err, ErrAccessDenied) {
			return err
		}
		return nil
	case http.StatusForbidden:
		return nil
	}
	return classify(err)
}

// s3Upload is the S3 side of a Writer: a multipart upload (or a single
// PUT), its conditional commit, and the recovery from lost answers.
type s3Upload struct {
	c           *Client
	bucket, key string
	force       bool   // replace an existing object
	ifMatch     string // replace only this version
	checksum    bool   // send CRC32 checksums of the parts
	uploadID    *string

	// A request to create the upload whose answer was lost and that was
	// made again may have left an upload nobody knows the ID of.
	mayOrphan bool
	started   time.Time
}

var _ partWriter = (*s3Upload)(nil)

func (u *s3Upload) wrap(err error) error { return u.c.fail("write", u.bucket, u.key, err) }

// begin creates the multipart upload.
func (u *s3Upload) begin(ctx context.Context) error {
	in := &s3.CreateMultipartUploadInput{Bucket: &u.bucket, Key: &u.key}
	if u.checksum {
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32
	}
	u.started = time.Now()
	out, err := u.c.s3.CreateMultipartUpload(ctx, in)
	if err != nil {
		if s := statusOf(err); s < 400 || s >= 500 {
			u.mayOrphan = true
		}
		return err
	}
	if r, ok := retry.GetAttemptResults(out.ResultMetadata); ok && len(r.Results) > 1 {
		u.mayOrphan = true
	}
	u.uploadID = out.UploadId
	return nil
}

// checksumOption keeps the SDK from adding a checksum of its own to an
// upload without checksums.
func (u *s3Upload) checksumOption(o *s3.Options) {
	if !u.checksum {
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	}
}

func (u *s3Upload) writePart(ctx context.Context, n int32, body io.ReadSeeker, size int64) (donePart, error) {
	in := &s3.UploadPartInput{
		Bucket: &u.bucket, Key: &u.key, UploadId: u.uploadID, PartNumber: &n,
		Body: body, ContentLength: aws.Int64(size),
	}
	if u.checksum {
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32
	}
	out, err := u.c.s3.UploadPart(ctx, in, u.checksumOption)
	if err != nil {
		return donePart{}, err
	}
	return donePart{n: n, etag: aws.ToString(out.ETag), checksum: aws.ToString(out.ChecksumCRC32)}, nil
}

// complete completes the upload, with the preconditions of the commit.
// A completion whose answer was lost, retried, is refused (the upload is
// gone, or the object exists): it succeeded if the object is now the one
// made of these parts.
func (u *s3Upload) complete(ctx context.Context, parts []donePart) error {
	completed := make([]types.CompletedPart, len(parts))
	for i, p := range parts {
		completed[i] = types.CompletedPart{PartNumber: aws.Int32(p.n), ETag: optional(p.etag), ChecksumCRC32: optional(p.checksum)}
	}
	in := &s3.CompleteMultipartUploadInput{
		Bucket: &u.bucket, Key: &u.key, UploadId: u.uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: completed},
	}
	u.conditions(&in.IfMatch, &in.IfNoneMatch)
	cctx, cancel := commitContext(ctx)
	defer cancel()
	out, err := u.c.s3.CompleteMultipartUpload(cctx, in, u.c.slowOp)
	if err != nil && (precondition(err) || codeOf(err) == "NoSuchUpload") && u.ours(ctx, multipartETag(parts)) {
		err = nil
	} else if err == nil && aws.ToString(out.ETag) == "" {
		err = errNotConfirmed
	}
	if err != nil {
		return u.conditionFailed(err)
	}
	u.sweep(ctx)
	return nil
}

// optional is s as an optional field: nil when empty.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// commitTimeout bounds the request that commits an object.
const commitTimeout = 10 * time.Minute

// commitContext is the context of the request that commits the object
// (the completion of the upload, or its single PUT), from the caller's
// ctx. Once that request is sent the store may commit the object whatever
// the client does, so a canceled context must not cut it short: the
// caller would report a failure while the object changes. It ends only
// with commitTimeout.
func commitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
}

// ours reports whether the object at the key now has the ETag expect,
// that is the bytes this upload sent: S3 (and the stores that follow it)
// gives a single PUT the MD5 of its bytes, and a multipart upload the MD5
// of its parts' MD5s with their count.
func (u *s3Upload) ours(ctx context.Context, expect string) bool {
	if expect == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	out, err := u.c.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &u.bucket, Key: &u.key})
	return err == nil && aws.ToString(out.ETag) == expect
}

// multipartETag is the ETag S3 gives an object made of parts, or "" if a
// part's ETag is not an MD5.
func multipartETag(parts []donePart) string {
	h := md5.New()
	for _, p := range parts {
		b, err := hex.DecodeString(strings.Trim(p.etag, `"`))
		if err != nil || len(b) != md5.Size {
			return ""
		}
		h.Write(b)
	}
	return fmt.Sprintf(`"%x-%d"`, h.Sum(nil), len(parts))
}

// sweep aborts the uploads of the key that a lost answer to the request
// creating this upload may have left: those begun in the minute before
// it, but for its own.
func (u *s3Upload) sweep(ctx context.Context) {
	if !u.mayOrphan {
		return
	}
	u.mayOrphan = false
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	out, err := u.c.s3.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &u.bucket, Prefix: &u.key})
	if err != nil {
		return
	}
	for _, up := range out.Uploads {
		if aws.ToString(up.Key) != u.key || up.UploadId == nil || u.uploadID != nil && *up.UploadId == *u.uploadID ||
			up.Initiated == nil || up.Initiated.Before(u.started.Add(-time.Minute)) {
			continue
		}
		u.c.s3.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &u.bucket, Key: &u.key, UploadId: up.UploadId})
	}
}

// put writes the whole object with one request. A PUT whose answer was
// lost, retried, is refused by its precondition: it succeeded if the
// object now has the MD5 of body.
func (u *s3Upload) put(ctx context.Context, body io.ReadSeeker, size int64) error {
	in := &s3.PutObjectInput{
		Bucket: &u.bucket, Key: &u.key,
		Body: body, ContentLength: aws.Int64(size),
	}
	u.conditions(&in.IfMatch, &in.IfNoneMatch)
	cctx, cancel := commitContext(ctx)
	defer cancel()
	out, err := u.c.s3.PutObject(cctx, in, u.checksumOption)
	if err == nil && aws.ToString(out.ETag) == "" {
		err = errNotConfirmed
	}
	if err != nil && precondition(err) {
		h := md5.New()
		_, rerr := body.Seek(0, io.SeekStart)
		if rerr == nil {
			_, rerr = io.Copy(h, body)
		}
		if rerr == nil && u.ours(ctx, `"`+hex.EncodeToString(h.Sum(nil))+`"`) {
			err = nil
		}
	}
	if err != nil {
		return u.conditionFailed(err)
	}
	return nil
}

// errNotConfirmed is the error of a write that the store answered
// without the ETag of the object written, as every S3 store gives it: a
// server that answers 200 to anything (a web server, a captive portal)
// is not taken to have stored the object.
var errNotConfirmed = errors.New("the store did not confirm the write: its answer has no ETag (is the endpoint an S3 store?)")

// conditions sets the preconditions of the commit.
func (u *s3Upload) conditions(ifMatch, ifNoneMatch **string) {
	switch {
	case u.ifMatch != "":
		*ifMatch = aws.String(u.ifMatch)
	case !u.force:
		*ifNoneMatch = aws.String("*")
	}
}

// conditionFailed names a failed precondition of the commit.
func (u *s3Upload) conditionFailed(err error) error {
	if !precondition(err) {
		return err
	}
	if u.ifMatch != "" {
		return &detailed{sentinel: ErrChanged, detail: "ETag is no longer " + u.ifMatch, cause: err}
	}
	return &detailed{sentinel: ErrExists, detail: "written meanwhile", cause: err}
}

// abort aborts the upload if it was begun, and sweeps what a lost answer
// to its creation may have left.
func (u *s3Upload) abort(ctx context.Context, begun, stopped bool) error {
	defer u.sweep(ctx)
	if !begun {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	return u.abortUpload(ctx, stopped)
}

// settleChecks are the delays after an abort at which an upload whose
// parts were stopped under way is looked for again.
var settleChecks = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}

// abortUpload aborts the upload. A part that was being sent when the
// abort came may still be stored by the server after it, and bring the
// upload back (S3 says so of AbortMultipartUpload: it may have to be
// called again): when a part request was stopped under way, the upload is
// looked for during a few seconds after the abort, and aborted again
// whenever it is there.
func (u *s3Upload) abortUpload(ctx context.Context, stopped bool) error {
	abort := func() error {
		_, err := u.c.s3.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &u.bucket, Key: &u.key, UploadId: u.uploadID})
		if err != nil && statusOf(err) != http.StatusNotFound {
			return u.c.fail("abort the upload of", u.bucket, u.key, err)
		}
		return nil
	}
	if err := abort(); err != nil {
		return err
	}
	if !stopped {
		return nil
	}
	for _, d := range settleChecks {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		_, err := u.c.s3.ListParts(ctx, &s3.ListPartsInput{Bucket: &u.bucket, Key: &u.key, UploadId: u.uploadID, MaxParts: aws.Int32(1)})
		if err != nil {
			continue // NoSuchUpload: gone, for now
		}
		if err := abort(); err != nil {
			return err
		}
	}
	return nil
}
