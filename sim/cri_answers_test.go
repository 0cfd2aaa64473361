package sim

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/calllog"
)

// TestAnswersAreTheAgents: the in-process client keeps the agent and fakecri from sharing a
// message, as a socket does, whether or not it copies. Each row's answer, every field changed by
// the agent, leaves fakecri answering what it answered before; an answer the agent holds stays as
// it was through fakecri's later work; and a request's config the agent changes after the call
// changes neither what fakecri answers nor its call log. A row fails if an answer pointing into
// fakecri's state is handed over uncopied, or if fakecri starts keeping or reusing what it hands
// out without the client copying it.
func TestAnswersAreTheAgents(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt, err := fakecri.New(fakecri.Options{Clock: mock, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := inProcess{rt: rt}
	spec := &runtimeapi.ImageSpec{Image: "app:1", Annotations: map[string]string{"a": "b"}}
	if _, err := c.PullImage(ctx, spec, nil, nil); err != nil {
		t.Fatal(err)
	}
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:    &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "u"},
		Labels:      map[string]string{"app": "web"},
		Annotations: map[string]string{"note": "sandbox"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD}}},
	}
	sb, err := c.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	ctrCfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: "app"},
		Image:       spec,
		Labels:      map[string]string{"app": "web"},
		Annotations: map[string]string{"note": "container"},
		Mounts:      []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/srv"}},
	}
	ctr, err := c.CreateContainer(ctx, sb, ctrCfg, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StartContainer(ctx, ctr); err != nil {
		t.Fatal(err)
	}

	rows := []struct {
		name string
		call func() (proto.Message, error)
	}{
		{"Version", func() (proto.Message, error) { return c.Version(ctx, "v1") }},
		{"Status", func() (proto.Message, error) { return c.Status(ctx, false) }},
		{"Status verbose", func() (proto.Message, error) { return c.Status(ctx, true) }},
		{"RuntimeConfig", func() (proto.Message, error) { return c.RuntimeConfig(ctx) }},
		{"ImageStatus", func() (proto.Message, error) { return c.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "app:1"}, true) }},
		{"ListImages", func() (proto.Message, error) {
			ims, err := c.ListImages(ctx, nil)
			return &runtimeapi.ListImagesResponse{Images: ims}, err
		}},
		{"ImageFsInfo", func() (proto.Message, error) { return c.ImageFsInfo(ctx) }},
		{"ContainerStatus", func() (proto.Message, error) { return c.ContainerStatus(ctx, ctr, false) }},
		{"PodSandboxStatus", func() (proto.Message, error) { return c.PodSandboxStatus(ctx, sb, false) }},
		{"ContainerStats", func() (proto.Message, error) { return c.ContainerStats(ctx, ctr) }},
		{"PodSandboxStats", func() (proto.Message, error) { return c.PodSandboxStats(ctx, sb) }},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			got, err := row.call()
			if err != nil {
				t.Fatal(err)
			}
			was := proto.Clone(got)
			scribble(got.ProtoReflect())
			if proto.Equal(got, was) {
				t.Fatalf("scribbling changed nothing in %v", was)
			}
			again, err := row.call()
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(again, was) {
				t.Errorf("the agent's changes to an answer reached fakecri:\n got %v\nwant %v", again, was)
			}
			// fakecri's later work, at a later time, leaves the answer the agent holds alone.
			held := proto.Clone(again)
			mock.Add(time.Second)
			if _, err := c.ListContainers(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := row.call(); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(again, held) {
				t.Errorf("fakecri changed an answer it handed out:\n got %v\nwant %v", again, held)
			}
		})
	}

	// The requests every node shares are as they were made.
	if !proto.Equal(versionV1, &runtimeapi.VersionRequest{Version: "v1"}) || !proto.Equal(notVerbose, &runtimeapi.StatusRequest{}) {
		t.Errorf("a shared request changed: %v, %v", versionV1, notVerbose)
	}

	// The agent's configs, changed after the calls that sent them, reach neither the answers nor
	// the call log.
	before := []proto.Message{}
	for _, call := range []func() (proto.Message, error){
		func() (proto.Message, error) { return c.ContainerStatus(ctx, ctr, true) },
		func() (proto.Message, error) { return c.PodSandboxStatus(ctx, sb, true) },
	} {
		m, err := call()
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, m)
	}
	logged := rt.Calls(calllog.Filter{})
	loggedWas := make([]proto.Message, len(logged))
	for i, l := range logged {
		loggedWas[i] = proto.Clone(l.Message)
	}
	scribble(sbCfg.ProtoReflect())
	scribble(ctrCfg.ProtoReflect())
	ctrNow, err := c.ContainerStatus(ctx, ctr, true)
	if err != nil {
		t.Fatal(err)
	}
	sbNow, err := c.PodSandboxStatus(ctx, sb, true)
	if err != nil {
		t.Fatal(err)
	}
	// The sandbox's answer carries the time it is asked at.
	sbNow.Timestamp = before[1].(*runtimeapi.PodSandboxStatusResponse).Timestamp
	if !proto.Equal(ctrNow, before[0]) || !proto.Equal(sbNow, before[1]) {
		t.Errorf("the agent's changes to its configs reached fakecri:\n%v\n%v\nwant\n%v\n%v", ctrNow, sbNow, before[0], before[1])
	}
	for i, l := range rt.Calls(calllog.Filter{})[:len(logged)] {
		if !proto.Equal(l.Message, loggedWas[i]) {
			t.Errorf("the agent's changes reached the call log's %s: %v, want %v", l.Method, l.Message, loggedWas[i])
		}
	}
}

// scribble changes m in place, down through the messages, lists and maps it has set: every
// string, number, flag, enum and bytes becomes another value, set or not, and a map gains a key.
func scribble(m protoreflect.Message) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if (fd.IsMap() || fd.IsList() || fd.Message() != nil) && !m.Has(fd) {
			continue
		}
		v := m.Get(fd)
		switch {
		case fd.IsMap():
			mp := v.Map()
			mp.Range(func(k protoreflect.MapKey, e protoreflect.Value) bool {
				if fd.MapValue().Message() != nil {
					scribble(e.Message())
				} else {
					mp.Set(k, other(fd.MapValue(), e))
				}
				return true
			})
			if fd.MapKey().Kind() == protoreflect.StringKind && fd.MapValue().Message() == nil {
				mp.Set(protoreflect.ValueOfString("scribbled").MapKey(), other(fd.MapValue(), fd.MapValue().Default()))
			}
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				if fd.Message() != nil {
					scribble(l.Get(i).Message())
				} else {
					l.Set(i, other(fd, l.Get(i)))
				}
			}
		case fd.Message() != nil:
			scribble(v.Message())
		default:
			m.Set(fd, other(fd, v))
		}
	}
}

// other is a value of fd's kind unlike v; bytes are changed in place, as a careless holder would.
func other(fd protoreflect.FieldDescriptor, v protoreflect.Value) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(v.String() + "~")
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(!v.Bool())
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(v.Enum() + 1)
	case protoreflect.BytesKind:
		b := v.Bytes()
		if len(b) == 0 {
			return protoreflect.ValueOfBytes([]byte("~"))
		}
		b[0]++
		return v
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(v.Float()) + 1)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(v.Float() + 1)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(v.Uint()) + 1)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(v.Uint() + 1)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(v.Int()) + 1)
	default:
		return protoreflect.ValueOfInt64(v.Int() + 1)
	}
}

// BenchmarkStatusRuntimeCalls: a node status post's runtime calls (Version and Status), and an
// image GC round's ImageFsInfo, through the in-process client, as every simulated node makes them.
func BenchmarkStatusRuntimeCalls(b *testing.B) {
	mock := clock.NewMock()
	rt, err := fakecri.New(fakecri.Options{Clock: mock, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	c := inProcess{rt: rt}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Version(ctx, "v1"); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Status(ctx, false); err != nil {
			b.Fatal(err)
		}
		if _, err := c.ImageFsInfo(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
