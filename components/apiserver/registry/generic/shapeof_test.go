package generic

import "testing"

func TestShapeOf(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":"x","b":1,"c":true,"d":null}`, `{"a":_,"b":_,"c":_,"d":null}`},
		{`{"m":{"k\"ey":"v,}"},"e":{}}`, `{"m":{"k\"ey":_},"e":{}}`},
		{`{"l":[{"name":"a","port":80},"s"],"n":-1.5e3}`, `{"l":[{"name":"a","port":80},"s"],"n":_}`},
		{` { "a" : "x" } `, `{"a":_}`},
	} {
		got, err := appendShape(nil, []byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("appendShape(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{`{"a":"x`, `{"a":[1,2}`, `{"a":nul}`, `{"a":1`, `}`} {
		if _, err := appendShape(nil, []byte(bad)); err == nil {
			t.Errorf("appendShape(%s) answered no error", bad)
		}
	}
}
