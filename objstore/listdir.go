package objstore

import (
	"context"
	"iter"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
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
	return func(yield func(ObjectInfo, error) bool) {
		p := s3.NewListObjectsV2Paginator(c.s3, &s3.ListObjectsV2Input{
			Bucket: &bucket, Prefix: &prefix, Delimiter: aws.String("/"),
		})
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
