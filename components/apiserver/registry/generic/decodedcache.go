package generic

import (
	"bytes"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"

	"orch.io/orch/components/apiserver/jsoncopy"
	"orch.io/orch/components/apiserver/storage"
)

// decodedCache holds, for each key an update of the store wrote, the object its stored bytes
// decode to (jsoncopy.Decoded of the object written), until a read of those same bytes (the key's
// revision, compared byte for byte) takes it: one read hands it out, so it is no one else's.
type decodedCache struct {
	mu sync.Mutex
	m  map[string]decodedEntry
}

// decodedHits counts the reads answered from a decodedCache, for the tests.
var decodedHits atomic.Int64

type decodedEntry struct {
	rev  int64
	data []byte
	obj  runtime.Object
	same bool // obj encodes as data
}

// decodedCacheLimit bounds the objects held: a key another writer deleted (a TTL, another
// server) is never read here again. Past it an entry goes, and its next read decodes.
const decodedCacheLimit = 1 << 15

// keepDecodedCopies is off only in the tests that compare the answers with and without it.
var keepDecodedCopies = true

// decodedCopy is what a write's stored bytes decode to (nil if not known) and whether it encodes
// as they are.
type decodedCopy struct {
	obj  runtime.Object
	same bool
}

// put keeps what data, stored at key in revision rev by a write of obj, decodes to.
func (c *decodedCache) put(key string, rev int64, data []byte, obj runtime.Object) {
	var d decodedCopy
	if keepDecodedCopies {
		var ok bool
		if d.obj, ok, d.same = jsoncopy.DecodedSame(obj); !ok {
			d.obj = nil
		}
	}
	c.keep(key, rev, data, d)
}

// keep keeps d, what data, stored at key in revision rev, decodes to; with no object, forgets key.
func (c *decodedCache) keep(key string, rev int64, data []byte, d decodedCopy) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d.obj == nil || !keepDecodedCopies {
		delete(c.m, key)
		return
	}
	if c.m == nil {
		c.m = map[string]decodedEntry{}
	}
	if _, held := c.m[key]; !held && len(c.m) >= decodedCacheLimit {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[key] = decodedEntry{rev: rev, data: data, obj: d.obj, same: d.same}
}

// take is the object kv, read at key, decodes to, if kept, and whether it encodes as kv's bytes;
// nil if not kept.
func (c *decodedCache) take(key string, kv storage.KeyValue) (obj runtime.Object, same bool) {
	c.mu.Lock()
	e, ok := c.m[key]
	if ok {
		delete(c.m, key)
	}
	c.mu.Unlock()
	if !ok || e.rev != kv.ModRevision || !bytes.Equal(e.data, kv.Value) {
		return nil, false
	}
	decodedHits.Add(1)
	return e.obj, e.same
}

// drop forgets key, deleted.
func (c *decodedCache) drop(key string) {
	c.mu.Lock()
	delete(c.m, key)
	c.mu.Unlock()
}
