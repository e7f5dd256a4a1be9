package objstore

import (
	"context"
	"iter"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// ObjectInfo describes an object found by List.
type ObjectInfo struct {
	Key          string
	Size         int64
	ETag         string
	LastModified time.Time
}

// List returns the objects of bucket whose keys start with prefix, at any
// depth, in the order the server lists them (by key, for S3). Keys that
// end in "/" (the empty "folder" objects some tools make) are left out.
// The iteration stops at the first error, which it yields.
func (c *Client) List(ctx context.Context, bucket, prefix string) iter.Seq2[ObjectInfo, error] {
	return c.list(ctx, bucket, prefix, nil)
}

// list is List, and with a delimiter ListDir: the objects of each page,
// then its common prefixes (none without a delimiter).
func (c *Client) list(ctx context.Context, bucket, prefix string, delimiter *string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		p := s3.NewListObjectsV2Paginator(c.s3, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix, Delimiter: delimiter})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				yield(ObjectInfo{}, c.fail("list", bucket, prefix, err))
				return
			}
			for _, o := range page.Contents {
				key := aws.ToString(o.Key)
				if key == "" || strings.HasSuffix(key, "/") {
					continue
				}
				info := ObjectInfo{Key: key, Size: aws.ToInt64(o.Size), ETag: aws.ToString(o.ETag), LastModified: aws.ToTime(o.LastModified)}
				if !yield(info, nil) {
					return
				}
			}
			for _, cp := range page.CommonPrefixes {
				key := aws.ToString(cp.Prefix)
				if len(key) <= len(prefix) || !strings.HasSuffix(key, "/") {
					continue
				}
				if !yield(ObjectInfo{Key: key}, nil) {
					return
				}
			}
		}
	}
}
