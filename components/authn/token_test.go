package authn

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

type tokenFunc func(ctx context.Context, token string) (*UserInfo, bool, error)

func (f tokenFunc) AuthenticateToken(ctx context.Context, token string) (*UserInfo, bool, error) {
	return f(ctx, token)
}

func TestBearer(t *testing.T) {
	errBad := errors.New("bad token")
	var seen string
	a := Bearer(tokenFunc(func(_ context.Context, token string) (*UserInfo, bool, error) {
		seen = token
		switch token {
		case "good":
			return &UserInfo{Name: "alice", Groups: []string{"devs"}}, true, nil
		case "bad":
			return nil, false, errBad
		}
		return nil, false, nil
	}))
	tests := []struct {
		header   string
		wantUser *UserInfo
		wantErr  error
		asked    string
	}{
		{"", nil, nil, ""},
		{"Basic YWxpY2U6cHc=", nil, nil, ""},
		{"Bearer good", &UserInfo{Name: "alice", Groups: []string{"devs", AllAuthenticated}}, nil, "good"},
		{"Bearer bad", nil, errBad, "bad"},
		{"Bearer other", nil, nil, "other"},
	}
	for _, tt := range tests {
		seen = ""
		r := request(tt.header)
		user, ok, err := a.AuthenticateRequest(r)
		if !reflect.DeepEqual(user, tt.wantUser) || ok != (tt.wantUser != nil) || !errors.Is(err, tt.wantErr) || seen != tt.asked {
			t.Errorf("%q: %+v, %v, %v (asked %q)", tt.header, user, ok, err, seen)
		}
		want := tt.header
		if ok {
			want = "" // credentials stop here
		}
		if got := r.Header.Get("Authorization"); got != want {
			t.Errorf("%q: Authorization header %q after ok=%v, want %q", tt.header, got, ok, want)
		}
	}
}
