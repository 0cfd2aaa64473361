package generic

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"orch.io/orch/components/apiserver/jsoncopy"
)

// An agent's node status post changes each condition's lastHeartbeatTime, a lease renewal its
// spec.renewTime: fields the writing manager already owns, alone. For such an update the
// library's answer is known without its comparison (a fixed ~10 µs and ~6 KB a call, and a keyed
// list's pairing: reports/speed.md): every manager's field set is what it was, the writer's entry
// re-dated. The library's Update gets there as follows (apimachinery's
// managedfields/internal, structured-merge-diff's merge.Updater):
//   - it decodes the request's managedFields, or the live object's when the request has none (a
//     nil list: an empty one resets them) or writes a subresource; a decoding error drops them;
//   - it reconciles every set with the schema (a set naming the insides of an atomic field is cut
//     to the field), compares the two objects, and takes the paths modified or added from every
//     other manager and the removed ones from all; a set left empty goes;
//   - the writer's entry gains the modified and added paths (less apiVersion, kind and metadata's
//     server-set fields) and, if any, the wall clock's time; with more than ten Update entries the
//     oldest are merged; the entries are sorted by operation, time, then identity.
//
// ownedUpdate gives that answer where each step provably changes nothing, and nothing otherwise.

// skipOwnedUpdates is off only in the tests that compare the managedFields written with and
// without it.
var skipOwnedUpdates = true

// ownedUpdates counts the updates every store answered without the library, for the tests.
var ownedUpdates atomic.Int64

// maxUpdateManagers is the library's DefaultMaxUpdateManagers: past it, Update entries merge.
const maxUpdateManagers = 10

// checkedSets caches, by their encoding, field sets known to decode, be non-empty, encode back to
// the same bytes and reconcile with the schema unchanged: a node's status set is the same bytes
// on every node, so the parse is paid once. A node's lease's is not (its owner reference is keyed
// by the node's uid): it holds one a node up to 65,536 (4,096 made 10,000 simulated nodes parse
// every lease's set at every renewal, 2% of their CPU). It is cleared when full.
type checkedSets struct {
	mu   sync.Mutex
	sets map[string]*fieldpath.Set
}

const maxCheckedSets = 1 << 16

func (c *checkedSets) get(raw []byte, root *typed.TypedValue) *fieldpath.Set {
	c.mu.Lock()
	s, ok := c.sets[string(raw)]
	c.mu.Unlock()
	if ok {
		return s
	}
	s = checkSet(raw, root)
	c.mu.Lock()
	if c.sets == nil || len(c.sets) >= maxCheckedSets {
		c.sets = map[string]*fieldpath.Set{}
	}
	c.sets[string(raw)] = s
	c.mu.Unlock()
	return s
}

// checkSet is the set raw encodes if the library would keep it as it is; nil otherwise.
func checkSet(raw []byte, root *typed.TypedValue) *fieldpath.Set {
	var s fieldpath.Set
	if err := s.FromJSON(bytes.NewReader(raw)); err != nil || s.Empty() {
		return nil
	}
	if again, err := s.ToJSON(); err != nil || !bytes.Equal(again, raw) {
		return nil
	}
	if reconciled, err := typed.ReconcileFieldSetWithSchema(&s, root); err != nil || reconciled != nil {
		return nil
	}
	return &s
}

// ownedUpdate is the managedFields the library would give next, an update of live by manager,
// dated on the store's clock, when next differs from live only in scalar fields manager
// alone owns; ok is false when that is not shown, and the library must answer.
func (f *fieldManager) ownedUpdate(live, next runtime.Object, manager string) (entries []metav1.ManagedFieldsEntry, ok bool) {
	u := f.tc.unvalidated // a kind whose typing cannot fail: the library would not err
	if u == nil || f.root == nil || manager == "" || reflect.TypeOf(live) != u.goType || reflect.TypeOf(next) != u.goType ||
		live.GetObjectKind().GroupVersionKind() != u.gvk || next.GetObjectKind().GroupVersionKind() != u.gvk {
		return nil, false
	}
	lm := accessor(live).GetManagedFields()
	if f.subresource == "" {
		if nm := accessor(next).GetManagedFields(); nm != nil && !jsoncopy.Equal(reflect.ValueOf(nm), reflect.ValueOf(lm)) {
			return nil, false
		}
	}
	gv := u.gvk.GroupVersion().String()
	sets := make([]*fieldpath.Set, len(lm))
	own, updates := -1, 0
	type identity struct{ manager, op, apiVersion, subresource string }
	seen := make(map[identity]bool, len(lm))
	for i, e := range lm {
		switch e.Operation {
		case metav1.ManagedFieldsOperationUpdate:
			updates++
		case metav1.ManagedFieldsOperationApply:
		default:
			return nil, false
		}
		if e.APIVersion != gv || e.FieldsType != "FieldsV1" || e.FieldsV1 == nil {
			return nil, false
		}
		id := identity{e.Manager, string(e.Operation), e.APIVersion, e.Subresource}
		if e.Operation == metav1.ManagedFieldsOperationApply {
			id.apiVersion = ""
		}
		if seen[id] {
			return nil, false
		}
		seen[id] = true
		if sets[i] = f.checked.get(e.FieldsV1.GetRawBytes(), f.root); sets[i] == nil {
			return nil, false
		}
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == f.subresource {
			own = i
		}
	}
	if own < 0 || updates > maxUpdateManagers {
		return nil, false
	}
	// The library sorts the entries with the writer's dated now (on the store's clock:
	// dateWrites) when its set took a path, at its own time otherwise. Its place is the same
	// either way when it sorts last of the Update entries at its own time and that time is not
	// after the clock's.
	if t := lm[own].Time; t != nil && t.Unix() > f.store.clock.Now().Unix() {
		return nil, false
	}
	entries = make([]metav1.ManagedFieldsEntry, len(lm))
	copy(entries, lm)
	sort.SliceStable(entries, func(i, j int) bool { return entryBefore(entries[i], entries[j]) })
	last := -1
	for i, e := range entries {
		if e.Operation == metav1.ManagedFieldsOperationUpdate {
			last = i
		}
	}
	if e := entries[last]; e.Manager != manager || e.Subresource != f.subresource {
		return nil, false
	}
	d := differ{schema: u.schema}
	if !d.root(reflect.ValueOf(live).Elem(), reflect.ValueOf(next).Elem(), u.typeRef) {
		return nil, false
	}
	for _, p := range d.paths {
		for i, s := range sets {
			if s.Has(p) != (i == own) {
				return nil, false
			}
		}
	}
	for i := range entries {
		fv := *entries[i].FieldsV1
		entries[i].FieldsV1 = &fv
	}
	if len(d.paths) > 0 { // the writer's set took them: its entry is dated
		now := metav1.NewTime(f.store.clock.Now().Truncate(time.Second))
		entries[last].Time = &now
	}
	return entries, true
}

// entryBefore is the library's order of managedFields entries (sortEncodedManagedFields).
func entryBefore(p, q metav1.ManagedFieldsEntry) bool {
	if p.Operation != q.Operation {
		return p.Operation < q.Operation
	}
	var ps, qs int64
	if p.Time != nil {
		ps = p.Time.Unix()
	}
	if q.Time != nil {
		qs = q.Time.Unix()
	}
	if ps != qs {
		return ps < qs
	}
	if p.Manager != q.Manager {
		return p.Manager < q.Manager
	}
	if p.APIVersion != q.APIVersion {
		return p.APIVersion < q.APIVersion
	}
	return p.Subresource < q.Subresource
}

// differ walks an update's two objects by the schema and collects the paths of the scalar fields
// that differ. Anything else that differs (a field or item appearing or going, a zero value, a
// list's length or order of keys, an atomic value, a map, metadata) ends the walk: the library
// must answer. It may see a difference where the library sees none (the guards then only fall
// back), never the reverse.
type differ struct {
	schema *smdschema.Schema
	path   fieldpath.Path
	paths  []fieldpath.Path
}

var objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()

// managedFieldsIndex is ObjectMeta's field the walk leaves out.
var managedFieldsIndex = func() int {
	f, _ := objectMetaType.FieldByName("ManagedFields")
	return f.Index[0]
}()

// fieldJSON is a struct field's JSON name as jsonField reads it; ok is false for one not encoded.
type fieldJSON struct {
	name       string
	inline, ok bool
}

// jsonFieldsOf caches jsonFields: reading the tags again was a fifth of the walk's CPU.
var jsonFieldsOf sync.Map // reflect.Type: []fieldJSON

// jsonFields is every field of the struct type t, by index.
func jsonFields(t reflect.Type) []fieldJSON {
	if fs, ok := jsonFieldsOf.Load(t); ok {
		return fs.([]fieldJSON)
	}
	fs := make([]fieldJSON, t.NumField())
	for i := range fs {
		name, _, _, inline, ok := jsonField(t.Field(i))
		fs[i] = fieldJSON{name, inline, ok}
	}
	jsonFieldsOf.Store(t, fs)
	return fs
}

// root walks the object structs l and n, whose metadata must be equal but for managedFields.
func (d *differ) root(l, n reflect.Value, tr smdschema.TypeRef) bool {
	atom, ok := d.schema.Resolve(tr)
	if !ok || atom.Map == nil {
		return false
	}
	return d.fields(l, n, atom.Map, true)
}

func (d *differ) fields(l, n reflect.Value, m *smdschema.Map, top bool) bool {
	if m.ElementRelationship == smdschema.Atomic {
		return false
	}
	fs := jsonFields(l.Type())
	for i, jf := range fs {
		if !jf.ok {
			continue
		}
		name, inline := jf.name, jf.inline
		lf, nf := l.Field(i), n.Field(i)
		if top && lf.Type() == objectMetaType {
			if !lf.CanAddr() || !nf.CanAddr() || !jsoncopy.EqualBut(lf, nf, managedFieldsIndex) {
				return false
			}
			continue
		}
		if jsoncopy.Equal(lf, nf) {
			continue
		}
		if inline {
			if lf.Kind() != reflect.Struct || !d.fields(lf, nf, m, false) {
				return false
			}
			continue
		}
		field, ok := m.FindField(name)
		if !ok {
			return false
		}
		// The cached name, read only: a pointer to the loop's copy allocated at every field
		// walked into.
		d.path = append(d.path, fieldpath.PathElement{FieldName: &fs[i].name})
		ok = d.value(lf, nf, field.Type)
		d.path = d.path[:len(d.path)-1]
		if !ok {
			return false
		}
	}
	return true
}

// value walks l and n, of one Go type and unequal, typed as tr.
func (d *differ) value(l, n reflect.Value, tr smdschema.TypeRef) bool {
	for l.Kind() == reflect.Pointer {
		if l.IsNil() || n.IsNil() {
			return false
		}
		l, n = l.Elem(), n.Elem()
	}
	atom, ok := d.schema.Resolve(tr)
	if !ok {
		return false
	}
	switch {
	case atom.Scalar != nil:
		// An untyped scalar alone (a time, a quantity) is a leaf whatever JSON value it holds;
		// one that may also be a list or a map (a raw extension) is not a scalar.
		return atom.List == nil && atom.Map == nil && d.leaf(l, n)
	case atom.List != nil:
		return l.Kind() == reflect.Slice && d.list(l, n, atom.List)
	case atom.Map != nil:
		return l.Kind() == reflect.Struct && !marshals(l.Type()) && d.fields(l, n, atom.Map, false)
	}
	return false
}

// leaf records a scalar's path when both values are there and not zero.
func (d *differ) leaf(l, n reflect.Value) bool {
	switch l.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
	case reflect.Struct:
		if !marshals(l.Type()) {
			return false
		}
		if sameJSON(l, n) {
			return true // unequal Go values the library sees as one: not a change
		}
	default:
		return false // floats (NaN), byte strings, interfaces: not worth their cases
	}
	if l.IsZero() || n.IsZero() {
		return false
	}
	d.paths = append(d.paths, d.path.Copy())
	return true
}

// sameJSON tells whether two values of a type typed through its own JSON encode the same, as the
// library compares them: times less than a second apart may.
func sameJSON(l, n reflect.Value) bool {
	if l.CanAddr() && n.CanAddr() { // a MarshalJSON of the pointer; no copy boxed
		l, n = l.Addr(), n.Addr()
	}
	switch lt := l.Interface().(type) {
	case *metav1.Time:
		nt := n.Interface().(*metav1.Time)
		return lt.IsZero() == nt.IsZero() && lt.Unix() == nt.Unix() // RFC 3339 to the second
	case *metav1.MicroTime: // a lease's renewTime
		nt := n.Interface().(*metav1.MicroTime)
		return lt.IsZero() == nt.IsZero() && lt.Unix() == nt.Unix() && lt.Nanosecond()/1000 == nt.Nanosecond()/1000
	}
	lj, err := json.Marshal(l.Interface())
	if err != nil {
		return false
	}
	nj, err := json.Marshal(n.Interface())
	return err == nil && bytes.Equal(lj, nj)
}

// list walks a keyed list whose items keep their keys and places. Two empty ones (nil and not)
// are not walked: the library may or may not see a change there.
func (d *differ) list(l, n reflect.Value, lt *smdschema.List) bool {
	if lt.ElementRelationship != smdschema.Associative || len(lt.Keys) == 0 || l.Len() != n.Len() || l.Len() == 0 || l.Type().Elem().Kind() != reflect.Struct {
		return false
	}
	kf, ok := keyFieldsOf(l.Type().Elem(), lt.Keys)
	if !ok {
		return false
	}
	for i := range l.Len() {
		li, ni := l.Index(i), n.Index(i)
		if !kf.present(li) || !kf.present(ni) || !kf.same(li, ni) {
			return false
		}
		for j := range i {
			if kf.same(l.Index(j), li) {
				return false // a key twice
			}
		}
	}
	for i := range l.Len() {
		li, ni := l.Index(i), n.Index(i)
		if jsoncopy.Equal(li, ni) {
			continue
		}
		key, ok := cachedItemKey(li, lt.Keys, kf)
		if !ok {
			return false
		}
		d.path = append(d.path, key)
		ok = d.value(li, ni, lt.ElementType)
		d.path = d.path[:len(d.path)-1]
		if !ok {
			return false
		}
	}
	return true
}

// keyFields are the fields of a keyed list's item type that hold its keys, by index: the values
// itemKey makes its path element of, compared without making it (a path element of each item of
// both lists was a third of the walk of a list).
type keyFields []int

type keyFieldsKey struct {
	t    reflect.Type
	keys string
}

var keyFieldsCache sync.Map // keyFieldsKey: keyFields, or nil if itemKey never answers

// keyFieldsOf is t's key fields, as itemKey finds them: for each key the field of its JSON name,
// a string, integer or boolean; false if one is missing, of another kind or named twice.
func keyFieldsOf(t reflect.Type, keys []string) (keyFields, bool) {
	ck := keyFieldsKey{t, strings.Join(keys, "\x00")}
	if kf, ok := keyFieldsCache.Load(ck); ok {
		return kf.(keyFields), kf.(keyFields) != nil
	}
	kf := make(keyFields, 0, len(keys))
	for _, key := range keys {
		at, twice := -1, false
		for i, jf := range jsonFields(t) {
			if jf.ok && !jf.inline && jf.name == key {
				twice, at = at >= 0, i
			}
		}
		if at < 0 || twice {
			kf = nil
			break
		}
		switch t.Field(at).Type.Kind() {
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			kf = append(kf, at)
		default:
			kf = nil
		}
		if kf == nil {
			break
		}
	}
	keyFieldsCache.Store(ck, kf)
	return kf, kf != nil
}

// present tells whether every key of item is there: not zero (an absent key the schema may
// default).
func (kf keyFields) present(item reflect.Value) bool {
	for _, i := range kf {
		if item.Field(i).IsZero() {
			return false
		}
	}
	return true
}

// same tells whether two items have the same keys.
func (kf keyFields) same(a, b reflect.Value) bool {
	for _, i := range kf {
		if !jsoncopy.Equal(a.Field(i), b.Field(i)) {
			return false
		}
	}
	return true
}

// itemKeys holds the path elements of the items of lists keyed by one string (a condition's
// type): making the element (its field list and the key's boxed value) was a sixth of a node
// status post's allocations in the store. An element is read only: the walk's paths are only
// asked Set.Has. Cleared when full, as an item's key may be anything a client sends.
var (
	itemKeys     sync.Map // itemKeyKey: fieldpath.PathElement
	itemKeysHeld atomic.Int64
)

type itemKeyKey struct {
	t          reflect.Type
	key, value string
}

const maxItemKeys = 1 << 12

// cachedItemKey is itemKey of an item whose key fields are kf.
func cachedItemKey(item reflect.Value, keys []string, kf keyFields) (fieldpath.PathElement, bool) {
	if len(kf) != 1 || item.Field(kf[0]).Kind() != reflect.String {
		return itemKey(item, keys)
	}
	k := itemKeyKey{item.Type(), keys[0], item.Field(kf[0]).String()}
	if e, ok := itemKeys.Load(k); ok {
		return e.(fieldpath.PathElement), true
	}
	e, ok := itemKey(item, keys)
	if !ok {
		return e, false
	}
	if itemKeysHeld.Add(1) > maxItemKeys {
		itemKeys.Clear()
		itemKeysHeld.Store(1)
	}
	itemKeys.Store(k, e)
	return e, true
}

// itemKey is a keyed list item's path element, when every key is a field of the item with a
// string, integer or boolean value that is not zero (an absent key the schema may default).
func itemKey(item reflect.Value, keys []string) (fieldpath.PathElement, bool) {
	fields := make(value.FieldList, 0, len(keys))
	for _, key := range keys {
		var v value.Value
		for i, jf := range jsonFields(item.Type()) {
			if !jf.ok || jf.inline || jf.name != key {
				continue
			}
			f := item.Field(i)
			if f.IsZero() {
				return fieldpath.PathElement{}, false
			}
			switch f.Kind() {
			case reflect.String:
				v = value.NewValueInterface(f.String())
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				v = value.NewValueInterface(f.Int())
			case reflect.Bool:
				v = value.NewValueInterface(f.Bool())
			}
		}
		if v == nil {
			return fieldpath.PathElement{}, false
		}
		fields = append(fields, value.Field{Name: key, Value: v})
	}
	fields.Sort()
	return fieldpath.PathElement{Key: &fields}, true
}
