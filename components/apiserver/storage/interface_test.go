package storage

import "testing"

// Every store refuses the same list options with the same words.
func TestListOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts ListOptions
		want string // "" for valid options
	}{
		{"latest, unlimited", ListOptions{}, ""},
		{"a page from a snapshot", ListOptions{Revision: 7, StartKey: "/registry/pods/b", Limit: 3}, ""},
		{"start key is the prefix", ListOptions{StartKey: "/registry/pods/"}, ""},
		{"negative limit", ListOptions{Limit: -1}, "storage: negative limit -1"},
		{"negative revision", ListOptions{Revision: -2}, "storage: negative revision -2"},
		{"start key outside the prefix", ListOptions{StartKey: "/registry/nodes/a"}, `storage: start key "/registry/nodes/a" is not under prefix "/registry/pods/"`},
		{"the limit is checked first", ListOptions{Limit: -1, Revision: -1, StartKey: "/x"}, "storage: negative limit -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate("/registry/pods/")
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Validate = %q, want %q", got, tt.want)
			}
		})
	}
}

// A list reads from its start key when one is given, else from the prefix.
func TestListOptionsStart(t *testing.T) {
	if got := (ListOptions{}).Start("/a/"); got != "/a/" {
		t.Errorf("Start without a start key = %q, want the prefix", got)
	}
	if got := (ListOptions{StartKey: "/a/2"}).Start("/a/"); got != "/a/2" {
		t.Errorf("Start = %q, want the start key", got)
	}
}
