package server

import (
	"container/list"
	"sync"

	"github.com/c4gh-go/crypt4gh/region"
)

// indexCache keeps the indexes read lately, by name and identity (the
// index file's [Object].ID): a ticket for a file whose index is in it
// opens the index but reads none of it. An index replaced since has
// another identity and is read anew, so that the cache changes no
// answer: instances with and without it give the same tickets. It holds
// at most maxBytes of index files as stored; the least recently used go
// first.
type indexCache struct {
	mu       sync.Mutex
	maxBytes int64
	bytes    int64
	order    *list.List // of *cachedIndex, most recent first
	byKey    map[string]*list.Element
}

type cachedIndex struct {
	key  string
	size int64 // of the index file
	idx  *region.Index
}

func newIndexCache(maxBytes int64) *indexCache {
	return &indexCache{maxBytes: maxBytes, order: list.New(), byKey: map[string]*list.Element{}}
}

func indexKey(name, id string) string { return name + "\x00" + id }

func (c *indexCache) get(key string) *region.Index {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[key]
	if !ok {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*cachedIndex).idx
}

// put keeps idx, read from an index file of size bytes, under key; an
// index larger than the whole cache is not kept.
func (c *indexCache) put(key string, size int64, idx *region.Index) {
	if size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; ok {
		return
	}
	c.byKey[key] = c.order.PushFront(&cachedIndex{key: key, size: size, idx: idx})
	c.bytes += size
	for c.bytes > c.maxBytes {
		old := c.order.Remove(c.order.Back()).(*cachedIndex)
		delete(c.byKey, old.key)
		c.bytes -= old.size
	}
}
