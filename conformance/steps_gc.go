package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"orch.io/orch/conformance/target"
)

// gcSteps read what the node agent's garbage collectors left in the runtime.
func gcSteps() []StepDef {
	return []StepDef{
		{`^the runtime no longer has the image "([^"]*)"$`, func(w *World) any { return w.imageGone }},
		{`^the runtime still has the image "([^"]*)" after (\d+)s$`, func(w *World) any { return w.imageKept }},
		{`^the agent recorded a (Normal|Warning) event "([^"]*)" about its node$`, func(w *World) any { return w.recordedNodeEvent }},
		{`^the agent recorded no event "([^"]*)" about its node$`, func(w *World) any { return w.recordedNoNodeEvent }},
		{`^the runtime's exited containers "([^"]*)" of pod "([^"]*)" go from (\d+) down to (\d+) within (\d+)s$`, func(w *World) any { return w.exitedCut }},
	}
}

// hasImage tells whether the runtime's state lists an image tagged name ("free:1" matches
// "docker.io/library/free:1").
func (w *World) hasImage(name string) (bool, error) {
	var s struct {
		Images []struct {
			RepoTags []string `json:"repoTags"`
		} `json:"images"`
	}
	if _, err := w.control("runtime", http.MethodGet, "/v1/state", nil, &s); err != nil {
		return false, err
	}
	for _, img := range s.Images {
		for _, tag := range img.RepoTags {
			if tag == name || strings.HasSuffix(tag, "/"+name) {
				return true, nil
			}
		}
	}
	return false, nil
}

func (w *World) imageGone(name string) error {
	return eventually(settle, func() error {
		has, err := w.hasImage(name)
		if err == nil && has {
			err = fmt.Errorf("the runtime still has the image %s", name)
		}
		return err
	})
}

func (w *World) imageKept(name string, seconds int) error {
	time.Sleep(time.Duration(seconds) * time.Second)
	has, err := w.hasImage(name)
	if err == nil && !has {
		err = fmt.Errorf("the runtime no longer has the image %s", name)
	}
	return err
}

// createdEvent is an event the agent recorded: written on its output as created (the profile's
// eventLog "output"), or logged by Kubernetes' event broadcaster (eventLog "klog").
type createdEvent struct {
	Type      string `json:"type"`
	Reason    string `json:"reason"`
	Regarding struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	} `json:"regarding"`
}

// createdEvents are the events the agent has recorded, in order; other lines are passed over.
func (w *World) createdEvents() []createdEvent {
	var out []createdEvent
	klog := w.agent().EventLog == target.EventLogKlog
	for _, line := range strings.Split(w.node().agent.out.output(), "\n") {
		if klog {
			if e, ok := klogEvent(line); ok {
				out = append(out, e)
			}
			continue
		}
		var write struct {
			Verb  string       `json:"verb"`
			Event createdEvent `json:"event"`
		}
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &write) == nil && write.Verb == "create" {
			out = append(out, write.Event)
		}
	}
	return out
}

// klogPair is a key="quoted value" pair of a klog structured line.
var klogPair = regexp.MustCompile(`(\w+)=("(?:[^"\\]|\\.)*")`)

// klogEvent reads a line of client-go's event broadcaster (record.StartStructuredLogging):
// "Event occurred" object="<namespace>/<name>" ... kind="Pod" ... type="Normal" reason="Pulled",
// the object of a cluster-scoped kind written without its namespace.
func klogEvent(line string) (createdEvent, bool) {
	var e createdEvent
	_, rest, ok := strings.Cut(line, `] "Event occurred" `)
	if !ok {
		return e, false
	}
	fields := map[string]string{}
	for _, m := range klogPair.FindAllStringSubmatch(rest, -1) {
		if v, err := strconv.Unquote(m[2]); err == nil {
			fields[m[1]] = v
		}
	}
	object := fields["object"]
	e.Type, e.Reason, e.Regarding.Kind = fields["type"], fields["reason"], fields["kind"]
	e.Regarding.Name = object[strings.LastIndex(object, "/")+1:]
	return e, e.Reason != "" && object != ""
}

// nodeEvents is the reasons of the events about the agent's node it has written, as "Type Reason".
func (w *World) nodeEvents() []string {
	var out []string
	for _, e := range w.createdEvents() {
		if e.Regarding.Kind == "Node" && e.Regarding.Name == nodeName {
			out = append(out, e.Type+" "+e.Reason)
		}
	}
	return out
}

func (w *World) recordedNodeEvent(kind, reason string) error {
	return eventually(settle, func() error {
		seen := w.nodeEvents()
		for _, e := range seen {
			if e == kind+" "+reason {
				return nil
			}
		}
		return fmt.Errorf("no %s event %s about the node among %q", kind, reason, seen)
	})
}

func (w *World) recordedNoNodeEvent(reason string) error {
	for _, e := range w.nodeEvents() {
		if strings.HasSuffix(e, " "+reason) {
			return fmt.Errorf("the agent recorded %s about the node", e)
		}
	}
	return nil
}

// exitedCount counts the exited instances of a container of a pod.
func (w *World) exitedCount(container, pod string) (int, error) {
	s, err := w.runtimeState()
	if err != nil {
		return 0, err
	}
	sandboxes := map[string]bool{}
	for _, sb := range s.Sandboxes {
		if sb.Name == pod || sb.Name == pod+"-"+nodeName {
			sandboxes[sb.ID] = true
		}
	}
	n := 0
	for _, c := range s.Containers {
		if sandboxes[c.SandboxID] && c.Name == container && c.State == "CONTAINER_EXITED" {
			n++
		}
	}
	return n, nil
}

// exitedCut waits for the exited instances to reach from, then for the first drop below the most
// seen, which must land on to: a collection removed exactly what it should in one go.
func (w *World) exitedCut(container, pod string, from, to, seconds int) error {
	most := 0
	return eventually(time.Duration(seconds)*time.Second, func() error {
		n, err := w.exitedCount(container, pod)
		if err != nil {
			return err
		}
		switch {
		case n >= most:
			most = n
			return fmt.Errorf("%d exited instances of %s, none removed yet", n, container)
		case most < from:
			return errStop{fmt.Errorf("exited instances of %s went from %d to %d, before reaching %d", container, most, n, from)}
		case n < to:
			return errStop{fmt.Errorf("exited instances of %s went from %d to %d, want %d", container, most, n, to)}
		case n != to:
			// The collection removes one instance at a time: this is its way down.
			return fmt.Errorf("exited instances of %s went from %d to %d so far, want %d", container, most, n, to)
		}
		return nil
	})
}
