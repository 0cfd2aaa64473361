package cacher

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/klauspost/compress/s2"

	"orch.io/orch/components/apiserver/storage"
)

// packer keeps the cache's values compressed with S2 against a dictionary: the first value the
// cache saw. Objects of one resource repeat most of each other's bytes (field names, managedFields,
// the controllers and objects they name), so an event of 1.6 KB keeps about 300 bytes, and S2,
// which has no entropy stage, reads it back at the speed of a copy.
type packer struct {
	dict    *s2.Dict
	scratch []byte // pack's output before it is copied to its exact size; the cache's lock guards it
	// unpacked is where a change's previous value is compared with the key's last packed one.
	unpacked []byte
}

// dictStart is how much of the first value names where values typically begin.
const dictStart = 32

func newPacker(first []byte) *packer {
	// MakeDict refuses a dictionary shorter than MinDictSize and keeps only the last MaxDictSize
	// bytes; the first bytes of a value are the ones worth keeping.
	dict := append([]byte(nil), first[:min(len(first), s2.MaxDictSize)]...) // first may be a store's buffer
	for len(dict) < s2.MinDictSize {
		dict = append(dict, "{}"...)
	}
	return &packer{dict: s2.MakeDict(dict, dict[:min(dictStart, len(dict))])}
}

// pack compresses v into a slice of its own exact size; nil stays nil, so an absent previous value
// stays absent. The cache's lock is held.
func (p *packer) pack(v []byte) []byte {
	if v == nil {
		return nil
	}
	p.scratch = p.dict.Encode(p.scratch[:cap(p.scratch)], v)
	return append([]byte(nil), p.scratch...)
}

// unpackedLen is the length of the value packed in b.
func unpackedLen(b []byte) (int, error) {
	n, err := s2.DecodedLen(b)
	if err != nil {
		return 0, fmt.Errorf("cacher: a cached value of %d bytes does not unpack: %w", len(b), err)
	}
	return n, nil
}

// unpack appends the value packed in b to dst.
func (p *packer) unpack(dst, b []byte) ([]byte, error) {
	if b == nil {
		return dst, nil
	}
	n, err := unpackedLen(b)
	if err != nil {
		return dst, err
	}
	if dst == nil {
		dst = []byte{} // an empty value is not an absent one
	}
	dst = slices.Grow(dst, n)
	if _, err := p.dict.Decode(dst[len(dst):len(dst)+n], b); err != nil {
		return dst, fmt.Errorf("cacher: a cached value does not unpack: %w", err)
	}
	return dst[:len(dst)+n], nil
}

// entry is a cached object: storage.KeyValue with its value packed, a type of its own so that
// packed bytes can never be answered as a value.
type entry struct {
	packed         []byte
	createRevision int64
	modRevision    int64
	stale          bool
}

func (p *packer) entry(kv storage.KeyValue) entry {
	return entry{packed: p.pack(kv.Value), createRevision: kv.CreateRevision, modRevision: kv.ModRevision, stale: kv.Stale}
}

// keyValue unpacks e, appending its value to buf, and answers the KeyValue and buf's new end.
func (p *packer) keyValue(key string, e entry, buf []byte) (storage.KeyValue, []byte, error) {
	start := len(buf)
	buf, err := p.unpack(buf, e.packed)
	if err != nil {
		return storage.KeyValue{}, buf, fmt.Errorf("%w (key %s)", err, key)
	}
	kv := storage.KeyValue{Key: key, Value: buf[start:len(buf):len(buf)], CreateRevision: e.createRevision, ModRevision: e.modRevision, Stale: e.stale}
	return kv, buf, nil
}

// change is a window's watch event with its values packed.
type change struct {
	typ     storage.EventType
	created bool
	key     string
	entry   entry
	prev    []byte
}

// change packs ev; last is what the cache holds packed for its key (nil if nothing), which is
// kept as the previous value when it is that value: an update's previous value is the key's last
// one, and unpacking to compare costs a fraction of packing it again.
func (p *packer) change(ev storage.WatchEvent, last []byte) change {
	prev := last
	if !p.holds(last, ev.PrevValue) {
		prev = p.pack(ev.PrevValue)
	}
	return change{typ: ev.Type, created: ev.Created, key: ev.KV.Key, entry: p.entry(ev.KV), prev: prev}
}

// holds tells whether packed, non-nil, unpacks to v.
func (p *packer) holds(packed, v []byte) bool {
	if packed == nil || v == nil {
		return false
	}
	if n, err := s2.DecodedLen(packed); err != nil || n != len(v) {
		return false
	}
	var err error
	p.unpacked, err = p.unpack(p.unpacked[:0], packed)
	return err == nil && bytes.Equal(p.unpacked, v)
}

func (p *packer) watchEvent(c change) (storage.WatchEvent, error) {
	kv, _, err := p.keyValue(c.key, c.entry, nil)
	if err != nil {
		return storage.WatchEvent{}, err
	}
	prev, err := p.unpack(nil, c.prev)
	if err != nil {
		return storage.WatchEvent{}, err
	}
	return storage.WatchEvent{Type: c.typ, Created: c.created, KV: kv, PrevValue: prev}, nil
}

// keyValues unpacks entries, named by keys, into one buffer sized from their headers: a
// LIST of many objects costs one allocation for their bytes.
func (p *packer) keyValues(keys []string, entries []entry) ([]storage.KeyValue, error) {
	size := 0
	for _, e := range entries {
		n, err := unpackedLen(e.packed)
		if err != nil {
			return nil, err
		}
		size += n
	}
	buf := make([]byte, 0, size)
	items := make([]storage.KeyValue, len(entries))
	for i, e := range entries {
		var err error
		if items[i], buf, err = p.keyValue(keys[i], e, buf); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// packedItems answers entries, named by keys, as a packed list's items (without their values) and
// the values that unpack each on demand.
func (p *packer) packedItems(keys []string, entries []entry) ([]storage.KeyValue, storage.Values) {
	items := make([]storage.KeyValue, len(entries))
	for i, e := range entries {
		items[i] = storage.KeyValue{Key: keys[i], CreateRevision: e.createRevision, ModRevision: e.modRevision, Stale: e.stale}
	}
	return items, packedValues{p: p, keys: keys, entries: entries}
}

// packedValues are a list's values, unpacked one at a time as they are read.
type packedValues struct {
	p       *packer
	keys    []string
	entries []entry
}

func (v packedValues) Value(i int, dst []byte) ([]byte, error) {
	out, err := v.p.unpack(dst, v.entries[i].packed)
	if err != nil {
		return dst, fmt.Errorf("%w (key %s)", err, v.keys[i])
	}
	return out, nil
}
