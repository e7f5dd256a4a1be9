package objstore

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// A Resumer is a [Store] whose uploads can go on after an interruption:
// the S3 store is one. Resume returns a writer of the object at loc that
// continues the latest upload of it left pending (by a writer with
// [WriterOptions.Keep]), keeping the parts that hold the bytes of src at
// their place, and the offset in src from which the caller must write;
// without such an upload it starts one, from 0. opts.Size must be the
// size of src, as it was for the writer that began the upload.
type Resumer interface {
	Resume(ctx context.Context, loc Location, src io.ReaderAt, opts *WriterOptions) (ObjectWriter, int64, error)
}

var _ Resumer = s3Store{}

func (s s3Store) Resume(ctx context.Context, loc Location, src io.ReaderAt, opts *WriterOptions) (ObjectWriter, int64, error) {
	if err := s.check("write", loc); err != nil {
		return nil, 0, err
	}
	w, from, err := s.c.ResumeWriter(ctx, loc.Bucket, loc.Key, src, opts)
	if err != nil {
		return nil, 0, err
	}
	return w, from, nil
}

// ResumeWriter returns a Writer of bucket/key that continues the latest
// upload of the key left pending, and the offset of src from which the
// caller must write to it. Of that upload's parts it keeps those, from
// the first, that are the part size of opts (the last one shorter where
// it ends the object) and whose MD5 (their ETag) is that of the same
// bytes of src, which it reads; the other parts are sent again. Without
// such an upload, or when nothing is kept, the Writer starts from 0 (the
// pending upload is left for [Client.AbortUpload]). opts.Size must be the
// size of src: the part size depends on it.
func (c *Client) ResumeWriter(ctx context.Context, bucket, key string, src io.ReaderAt, opts *WriterOptions) (*Writer, int64, error) {
	if key == "" || key[len(key)-1] == '/' {
		return nil, 0, c.fail("write", bucket, key, &detailed{sentinel: ErrInvalidURL, detail: "a prefix, not an object"})
	}
	opt, err := writerOptions(opts)
	if err != nil {
		return nil, 0, c.fail("write", bucket, key, err)
	}
	if opt.Size <= 0 {
		return nil, 0, c.fail("write", bucket, key, errkind.Errorf(errkind.Usage, "an upload is resumed only for a known size"))
	}
	if opt.IfMatch != "" {
		opt.Force = true
	}
	if !opt.Force {
		if err := c.checkAbsent(ctx, bucket, key); err != nil {
			return nil, 0, c.fail("write", bucket, key, err)
		}
	}
	up, err := c.latestUpload(ctx, bucket, key)
	if err != nil {
		return nil, 0, c.fail("write", bucket, key, err)
	}
	if up == nil {
		w, _, err := c.newWriter(ctx, bucket, key, &opt, false)
		return w, 0, err
	}
	kept, from, err := c.keptParts(ctx, bucket, key, up, src, opt)
	if err != nil {
		return nil, 0, c.fail("write", bucket, key, err)
	}
	u := &s3Upload{c: c, bucket: bucket, key: key, force: opt.Force, ifMatch: opt.IfMatch,
		checksum: up.ChecksumAlgorithm == types.ChecksumAlgorithmCrc32, uploadID: up.UploadId}
	w := newWriter(ctx, u, opt, false)
	w.begun = true
	w.parts = kept
	w.next = int32(len(kept)) + 1
	return w, from, nil
}

// latestUpload returns the upload of key begun last that a Writer can
// go on with (no checksums, or CRC32 as a Writer sends them), or nil.
func (c *Client) latestUpload(ctx context.Context, bucket, key string) (*types.MultipartUpload, error) {
	var latest *types.MultipartUpload
	in := &s3.ListMultipartUploadsInput{Bucket: &bucket, Prefix: &key}
	for {
		out, err := c.s3.ListMultipartUploads(ctx, in)
		if err != nil {
			return nil, classify(err)
		}
		for i := range out.Uploads {
			u := &out.Uploads[i]
			if aws.ToString(u.Key) != key || u.UploadId == nil {
				continue
			}
			if a := u.ChecksumAlgorithm; a != "" && a != types.ChecksumAlgorithmCrc32 {
				continue
			}
			if latest == nil || aws.ToTime(u.Initiated).After(aws.ToTime(latest.Initiated)) {
				latest = u
			}
		}
		if !aws.ToBool(out.IsTruncated) || (out.NextKeyMarker == nil && out.NextUploadIdMarker == nil) {
			return latest, nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// keptParts returns the parts of up that hold the bytes of src at their
// place, from the first on, and where the bytes they do not hold begin.
func (c *Client) keptParts(ctx context.Context, bucket, key string, up *types.MultipartUpload, src io.ReaderAt, opt WriterOptions) ([]donePart, int64, error) {
	in := &s3.ListPartsInput{Bucket: &bucket, Key: &key, UploadId: up.UploadId}
	var kept []donePart
	var at int64
	buf := make([]byte, 1<<20)
	for {
		out, err := c.s3.ListParts(ctx, in)
		if err != nil {
			return nil, 0, classify(err)
		}
		for _, p := range out.Parts {
			n, size := aws.ToInt32(p.PartNumber), aws.ToInt64(p.Size)
			want := min(opt.PartSize, opt.Size-at)
			if n != int32(len(kept))+1 || size != want || want <= 0 {
				return kept, at, nil
			}
			h := md5.New()
			if _, err := io.CopyBuffer(h, io.NewSectionReader(src, at, size), buf); err != nil {
				return nil, 0, fmt.Errorf("failed to read the source of part %d: %w", n, err)
			}
			if hex.EncodeToString(h.Sum(nil)) != strings.Trim(aws.ToString(p.ETag), `"`) {
				return kept, at, nil
			}
			kept = append(kept, donePart{n: n, etag: aws.ToString(p.ETag), checksum: aws.ToString(p.ChecksumCRC32)})
			at += size
		}
		if !aws.ToBool(out.IsTruncated) || out.NextPartNumberMarker == nil {
			return kept, at, nil
		}
		in.PartNumberMarker = out.NextPartNumberMarker
	}
}
