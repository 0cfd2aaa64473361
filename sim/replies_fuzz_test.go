package sim

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"orch.io/orch/sim/converge"
)

// maxStoryTime flags a run that crawls: the story takes well under a second of wall time, so a
// minute means the agent hangs on an answer.
const maxStoryTime = time.Minute

const pairManifest = `apiVersion: v1
kind: Pod
metadata: {name: pair}
spec:
  containers:
  - {name: a, image: busybox:1.36}
  - {name: b, image: nginx:1.27}
`

// FuzzCRIReplies feeds the agent the runtime's answers changed as the fuzzer's bytes say: each
// answer of every method (sandboxes and containers listed, their statuses, stats, images, versions,
// the ids of what was created, the image filesystems) takes a byte, and one in four is changed in
// one field (a value replaced, a message or list or label dropped, a list cut short), until the
// bytes run out. Two pods start and run meanwhile. The agent must not panic or hang, and once the
// answers are true again it must converge within one sync period and a minute: each pod in one
// ready sandbox with each of its containers running once, nothing else running.
func FuzzCRIReplies(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{1, 1, 1, 0, 1, 2, 1, 0, 4, 7, 1, 1, 0, 3, 0})
	f.Add([]byte("\x00\x02\x01\x00\x05\x02\x00\x09\x00\x00\x03\x01"))
	f.Add([]byte(strings.Repeat("\x04\x01\x00\x08\x03", 20)))
	f.Fuzz(func(t *testing.T, data []byte) {
		m := &mutator{data: data}
		watchdog := time.AfterFunc(maxStoryTime, func() {
			panic(fmt.Sprintf("the node still runs after %v on %q", maxStoryTime, data))
		})
		defer watchdog.Stop()
		w, err := New(Options{Seed: 1, Keep: func(Entry) bool { return false }})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		n, err := w.AddNode(NodeOptions{Name: "node-a", replies: m.reply, Args: []string{"--pod-manifest-path=/etc/orch/manifests", "--sync-frequency=1m"}})
		if err != nil {
			t.Fatal(err)
		}
		n.WriteManifest("web.yaml", []byte(webManifest))
		n.WriteManifest("pair.yaml", []byte(pairManifest))
		// The bytes run out long before the end: each minute asks the runtime hundreds of things.
		if err := w.RunUntil(3 * time.Minute); err != nil {
			t.Fatal(err)
		}
		if !m.spent() {
			t.Skipf("%d bytes of answers not spent in 3 minutes", len(data))
		}
		if err := w.Advance(2 * time.Minute); err != nil {
			t.Fatal(err)
		}
		t.Logf("%d answers changed: %s", m.changed, strings.Join(m.log, "; "))
		if err := converge.Converged(n.Runtime.State(), map[string][]string{"default/web-node-a": {"app"}, "default/pair-node-a": {"a", "b"}}); err != nil {
			t.Fatalf("%d changed answers (%s), then 2 minutes of true ones: %v", m.changed, strings.Join(m.log, "; "), err)
		}
	})
}

// mutator changes answers as its bytes say, one byte or a few per answer, until they run out.
type mutator struct {
	mu      sync.Mutex // background pulls answer from their own goroutines
	data    []byte
	changed int
	log     []string
}

func (m *mutator) next() (byte, bool) {
	if len(m.data) == 0 {
		return 0, false
	}
	b := m.data[0]
	m.data = m.data[1:]
	return b, true
}

func (m *mutator) spent() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.data) == 0
}

func (m *mutator) reply(method string, msg proto.Message) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if b, ok := m.next(); !ok || b%4 != 0 {
		return
	}
	if what := m.mutate(msg.ProtoReflect(), 0); what != "" {
		m.changed++
		if len(m.log) < 20 {
			m.log = append(m.log, method+": "+what)
		}
	}
}

// mutate changes one field of r, chosen by the next bytes, and says what it did.
func (m *mutator) mutate(r protoreflect.Message, depth int) string {
	fields := r.Descriptor().Fields()
	if fields.Len() == 0 {
		return ""
	}
	b, _ := m.next()
	fd := fields.Get(int(b) % fields.Len())
	op, _ := m.next()
	name := string(fd.Name())
	switch {
	case fd.IsMap():
		mp := r.Mutable(fd).Map()
		var keys []string
		mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
			keys = append(keys, k.String())
			return true
		})
		slices.Sort(keys)
		if op%3 == 0 || len(keys) == 0 {
			r.Clear(fd)
			return name + " cleared"
		}
		k := protoreflect.ValueOfString(keys[int(op)%len(keys)]).MapKey()
		if op%3 == 1 || fd.MapValue().Kind() != protoreflect.StringKind {
			mp.Clear(k)
			return name + "[" + k.String() + "] dropped"
		}
		v := m.str(keys[int(op)%len(keys)])
		mp.Set(k, protoreflect.ValueOfString(v))
		return fmt.Sprintf("%s[%s] = %q", name, k.String(), v)
	case fd.IsList():
		l := r.Mutable(fd).List()
		switch {
		case op%3 == 0 || l.Len() == 0:
			r.Clear(fd)
			return name + " cleared"
		case op%3 == 1:
			l.Truncate(l.Len() - 1)
			return name + " cut short"
		case fd.Kind() == protoreflect.MessageKind && depth < 4:
			i := int(op) % l.Len()
			return fmt.Sprintf("%s[%d].%s", name, i, m.mutate(l.Get(i).Message(), depth+1))
		default:
			l.Set(int(op)%l.Len(), m.scalar(fd, l.Get(int(op)%l.Len())))
			return name + " item replaced"
		}
	case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
		if op%2 == 0 || depth >= 4 {
			r.Clear(fd)
			return name + " dropped"
		}
		return name + "." + m.mutate(r.Mutable(fd).Message(), depth+1)
	default:
		v := m.scalar(fd, r.Get(fd))
		r.Set(fd, v)
		return fmt.Sprintf("%s = %v", name, v.Interface())
	}
}

// scalar is a value of fd's kind made from the next bytes: edges (0, -1, the largest) and
// whatever the bytes spell.
func (m *mutator) scalar(fd protoreflect.FieldDescriptor, old protoreflect.Value) protoreflect.Value {
	b, _ := m.next()
	var n uint64
	for range 8 {
		c, _ := m.next()
		n = n<<8 | uint64(c)
	}
	switch b % 4 {
	case 0:
		n = 0
	case 1:
		n = ^uint64(0)
	case 2:
		n = 1 << 63
	}
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(!old.Bool())
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(protoreflect.EnumNumber(int32(n)))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(n))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(int64(n))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(n))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(n)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(int64(n)))
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(int64(n)))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(m.str(string(old.Bytes()))))
	default:
		return protoreflect.ValueOfString(m.str(old.String()))
	}
}

// str is old changed by the next byte: emptied, cut, doubled, or replaced by the bytes after it.
func (m *mutator) str(old string) string {
	b, _ := m.next()
	switch b % 4 {
	case 0:
		return ""
	case 1:
		return old[:len(old)/2]
	case 2:
		return old + old
	}
	n := int(b>>2) % 16
	var s []byte
	for range n {
		c, ok := m.next()
		if !ok {
			break
		}
		s = append(s, c)
	}
	return string(s)
}
