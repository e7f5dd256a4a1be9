// Package objstore reads and writes Crypt4GH files kept in S3-compatible
// object stores, and on web servers that answer range requests, so that
// the library (c4gh and below, none of which imports this package) works
// on objects as on files.
//
// # Stores
//
// A [Store] is what a caller holds: open an object (an [Object]: an
// io.ReaderAt with its size and ETag, whose head [Object.Head] reads in one
// request), create a writer with abort, list, compose on the server.
// [OpenStore] returns the Store of a location's scheme from a registry:
// s3:// is a [Client] ([Client.Store]), https:// and http:// read web
// resources (and refuse the rest with [ErrUnsupported]). A backend in
// another package implements Store, makes the Objects of its Open with
// [NewObject] from a [RangeGetter] (so that pinning, read-ahead, resumed
// bodies and parallel streams are the same for all), and adds its scheme
// with [Register]. Package mount/storesource shows a Store's objects to a
// mount.
//
// # Locations and clients
//
// [Parse] reads s3://BUCKET/KEY, s3://BUCKET/PREFIX/, https://... and
// http:// to a loopback address, refusing URLs with credentials in them.
// A [Client] talks to one endpoint with one set of credentials: [New]
// takes them from an s3cmd configuration file ([Config].S3Config, as the
// s3cmd and NeIC sda-cli clients use), or from the standard AWS sources:
// the environment, ~/.aws/config and ~/.aws/credentials with their
// profiles, AWS_ENDPOINT_URL_S3 (a custom endpoint is addressed in path
// style), AWS_REQUEST_CHECKSUM_CALCULATION=when_required for stores that
// reject the SDK's default CRC32 checksums. No secret ever appears in an
// error or a hint.
//
// # Reading
//
// [Client.Open] and [OpenURL] return an [Object], one version of an object
// pinned by its ETag: every request carries If-Match, so an object that
// changes while it is read is [ErrChanged], never a mix. An Object is an
// io.ReaderAt with a small read-ahead cache, for random access through
// c4gh.NewReaderAt; [Object.NewReader] streams a range with parallel
// ranged GETs delivered in order, holding at most Concurrency × ChunkSize
// bytes (64 MiB at the defaults). A body that breaks off or stalls is
// requested again from where it broke; resets, timeouts, 5xx answers and
// throttling are retried with backoff.
//
// # Writing
//
// [Client.NewWriter] returns a [Writer], an io.WriteCloser that sends a
// stream as a multipart upload, parts in parallel, holding at most
// WriterOptions.Memory bytes of them (Concurrency × PartSize, 128 MiB at
// the defaults). The part size grows with a large known size, and along a
// long stream of unknown size (it doubles every 1,000 parts), so that no
// object needs more than 10,000 parts; fewer parts are then held at once,
// within the same memory, and parts too large for two of them to fit are
// written to temporary files instead (two at most, removed as soon as
// they are open), so that memory stays within the bound up to
// the 5 TiB that S3 holds. Close commits the object; any failure and
// [Writer.Abort] abort the upload, leaving neither an object nor a pending upload. Without
// Force an existing object is not replaced: checked before the upload,
// and enforced at the commit with If-None-Match: * where the server
// supports conditional writes.
//
// [Client.Compose] builds an object from bytes and ranges of other
// objects, copying the ranges on the server (UploadPartCopy pinned to the
// source's ETag): a new header before the body of an existing file costs
// the header and about 5 MiB of traffic, whatever the size of the file,
// and the destination may be the source itself.
//
// [Client.List] lists the objects under a prefix, for batch work;
// [Client.ListDir] lists one level of it, as a folder, for a file system
// view.
//
// # Errors
//
// Errors are *[Error] values that name the operation and the location.
// They wrap the sentinels of this package, which carry the kinds of
// internal/errkind: a refusal or missing credentials are Key errors, with a
// hint ([Error.Hint]) naming the credential source and endpoint used; a
// missing bucket or object and an existing destination are Usage errors;
// network failures that outlast the retries, and a changed object, are
// Other.
package objstore
