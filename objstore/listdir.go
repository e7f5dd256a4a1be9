package objstore

import (
	"context"
	"iter"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// ListDir returns what lies directly under prefix, as a folder shows it
// with "/" as the separator: the objects whose keys are prefix followed by
// a name without a "/", and each deeper "folder" once, as an ObjectInfo
// whose Key is prefix, a name and "/" (its other fields are zero). Objects
// and folders come in the order the server lists them (by key, for S3),
// each kind on its own, a page at a time. Keys that end in "/" (the empty
// "folder" objects some tools make) are left out as objects. The
// iteration stops at the first error, which it yields.
func (c *Client) ListDir(ctx context.Context, bucket, prefix string) iter.Seq2[ObjectInfo, error] {
	return c.list(ctx, bucket, prefix, aws.String("/"))
}
