package objstore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// A Presigner gives presigned GET URLs of its objects: URLs that anyone
// who holds one reads the object with (ranged requests included) until
// it expires, without credentials. The Store of s3:// locations is one.
type Presigner interface {
	PresignGet(ctx context.Context, loc Location, lifetime time.Duration) (string, error)
}

// PresignGet returns a GET URL of the object bucket/key signed with c's
// credentials, valid for lifetime. Nothing is sent to the server.
func (c *Client) PresignGet(ctx context.Context, bucket, key string, lifetime time.Duration) (string, error) {
	req, err := s3.NewPresignClient(c.s3).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key},
		s3.WithPresignExpires(lifetime))
	if err != nil {
		return "", c.fail("presign", bucket, key, err)
	}
	return req.URL, nil
}

func (s s3Store) PresignGet(ctx context.Context, loc Location, lifetime time.Duration) (string, error) {
	if err := s.check("presign", loc); err != nil {
		return "", err
	}
	return s.c.PresignGet(ctx, loc.Bucket, loc.Key, lifetime)
}
