package objstore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// VersionID is the version id of the object as it was opened, where its
// bucket keeps versions; "" otherwise ("null" for an object written while
// versioning was suspended or off).
func (o *Object) VersionID() string { return o.version }

// Versioner is a [Store] whose buckets may keep the versions that an
// overwrite replaces: after a file is rekeyed in place, the previous
// version would still open with the packets that the rekey removed.
type Versioner interface {
	// Versioned reports whether the bucket of loc keeps previous
	// versions (versioning enabled, or suspended with versions kept).
	Versioned(ctx context.Context, loc Location) (bool, error)
	// DeleteVersion deletes exactly the version versionID of the
	// object at loc.
	DeleteVersion(ctx context.Context, loc Location, versionID string) error
}

var _ Versioner = s3Store{}

func (s s3Store) Versioned(ctx context.Context, loc Location) (bool, error) {
	if err := s.check("versioning", loc); err != nil {
		return false, err
	}
	return s.c.Versioned(ctx, loc.Bucket)
}

func (s s3Store) DeleteVersion(ctx context.Context, loc Location, versionID string) error {
	if err := s.check("delete", loc); err != nil {
		return err
	}
	return s.c.DeleteVersion(ctx, loc.Bucket, loc.Key, versionID)
}

// Versioned reports whether the bucket keeps previous versions of its
// objects: versioning is enabled, or was and is suspended (the versions
// written before stay).
func (c *Client) Versioned(ctx context.Context, bucket string) (bool, error) {
	out, err := c.s3.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: &bucket})
	if err != nil {
		return false, c.fail("versioning", bucket, "", classify(err))
	}
	return out.Status == types.BucketVersioningStatusEnabled || out.Status == types.BucketVersioningStatusSuspended, nil
}

// DeleteVersion deletes the version versionID of the object at key, and
// nothing else: not the object's current version, unless it is that one.
func (c *Client) DeleteVersion(ctx context.Context, bucket, key, versionID string) error {
	if versionID == "" {
		return c.fail("delete", bucket, key, &detailed{sentinel: ErrInvalidURL, detail: "no version id"})
	}
	_, err := c.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &key, VersionId: &versionID})
	if err != nil {
		return c.fail("delete", bucket, key, classify(err))
	}
	return nil
}
