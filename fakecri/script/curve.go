package script

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"time"
)

// Curve is a usage value over time, measured from the moment a container
// starts. In a script it is written as one of:
//
//	memory: 64Mi                                   # constant
//	memory: {constant: 64Mi}                       # the same
//	memory: {ramp: {from: 10Mi, to: 1Gi, over: 2m}} # linear, then holds `to`
//	memory: {ramp: {from: 10Mi, perSecond: 1Mi}}    # grows without bound
//	memory: {ramp: {from: 10Mi, to: 1Gi, over: 2m, after: 30s}} # flat for 30s first
//	memory: {steps: [{at: 0s, value: 10Mi}, {at: 30s, value: 500Mi}]}
//
// Values are quantities ("64Mi", "250m", 1000); what unit they carry depends
// on the field (bytes, cores, inodes, processes).
type Curve struct {
	Constant *Quantity `json:"constant,omitempty"`
	Ramp     *Ramp     `json:"ramp,omitempty"`
	Steps    []Step    `json:"steps,omitempty"`
}

// Ramp is a linear change of a value.
type Ramp struct {
	From Quantity `json:"from"`
	// To and Over: the value reaches To after Over and then holds.
	To   *Quantity `json:"to,omitempty"`
	Over Duration  `json:"over,omitempty"`
	// PerSecond: the value grows (or shrinks) by this much each second, for ever.
	PerSecond *Quantity `json:"perSecond,omitempty"`
	// After delays the start of the ramp; the value is From until then.
	After Duration `json:"after,omitempty"`
}

// Step sets the value from At (since the container started) on.
type Step struct {
	At    Duration `json:"at"`
	Value Quantity `json:"value"`
}

// ConstantCurve returns a curve that is always v.
func ConstantCurve(v Quantity) *Curve { return &Curve{Constant: &v} }

// UnmarshalJSON accepts a bare quantity as a constant curve.
func (c *Curve) UnmarshalJSON(b []byte) error {
	var q Quantity
	if err := q.UnmarshalJSON(b); err == nil {
		*c = Curve{Constant: &q}
		return nil
	}
	type plain Curve
	var p plain
	if err := strictJSON(b, &p); err != nil {
		return fmt.Errorf("usage curve: %w", err)
	}
	*c = Curve(p)
	return nil
}

// MarshalJSON writes a constant curve as a bare quantity.
func (c Curve) MarshalJSON() ([]byte, error) {
	if c.Constant != nil && c.Ramp == nil && len(c.Steps) == 0 {
		return c.Constant.MarshalJSON()
	}
	type plain Curve
	return json.Marshal(plain(c))
}

// segment i runs from pts[i] to pts[i+1]; the last point continues with tail slope.
type curvePoint struct {
	t      float64 // seconds since start
	v      float64
	linear bool // true: interpolate to the next point; false: hold v until the next point
}

// Piecewise is a piecewise linear function of time since start.
type Piecewise struct {
	pts  []curvePoint
	tail float64 // slope after the last point, per second
}

func compileCurve(c *Curve, field string) (*Piecewise, error) {
	if c == nil {
		return nil, nil
	}
	set := 0
	if c.Constant != nil {
		set++
	}
	if c.Ramp != nil {
		set++
	}
	if len(c.Steps) > 0 {
		set++
	}
	if set != 1 {
		return nil, fmt.Errorf("%s: give exactly one of a value, constant, ramp or steps", field)
	}
	switch {
	case c.Constant != nil:
		if c.Constant.v < 0 {
			return nil, fmt.Errorf("%s: negative value", field)
		}
		return &Piecewise{pts: []curvePoint{{t: 0, v: c.Constant.v}}}, nil
	case c.Ramp != nil:
		r := c.Ramp
		start := r.After.D().Seconds()
		if start < 0 || r.Over.D() < 0 {
			return nil, fmt.Errorf("%s: negative duration in ramp", field)
		}
		cc := &Piecewise{pts: []curvePoint{{t: 0, v: r.From.v}}}
		if start > 0 {
			cc.pts = append(cc.pts, curvePoint{t: start, v: r.From.v})
		}
		switch {
		case r.PerSecond != nil && r.To == nil:
			cc.tail = r.PerSecond.v
		case r.To != nil && r.PerSecond == nil:
			over := r.Over.D().Seconds()
			if over <= 0 {
				return nil, fmt.Errorf("%s: a ramp with `to` needs a positive `over`", field)
			}
			cc.pts[len(cc.pts)-1].linear = true
			cc.pts = append(cc.pts, curvePoint{t: start + over, v: r.To.v})
		default:
			return nil, fmt.Errorf("%s: a ramp needs either `to` and `over`, or `perSecond`", field)
		}
		for _, p := range cc.pts {
			if p.v < 0 {
				return nil, fmt.Errorf("%s: negative value", field)
			}
		}
		return cc, nil
	default:
		steps := append([]Step(nil), c.Steps...)
		sort.SliceStable(steps, func(i, j int) bool { return steps[i].At.D() < steps[j].At.D() })
		cc := &Piecewise{}
		if steps[0].At.D() > 0 {
			cc.pts = append(cc.pts, curvePoint{t: 0, v: 0})
		}
		for _, s := range steps {
			if s.At.D() < 0 || s.Value.v < 0 {
				return nil, fmt.Errorf("%s: negative step", field)
			}
			cc.pts = append(cc.pts, curvePoint{t: s.At.D().Seconds(), v: s.Value.v})
		}
		return cc, nil
	}
}

// At returns the value d after start.
func (c *Piecewise) At(d time.Duration) float64 {
	if c == nil {
		return 0
	}
	t := d.Seconds()
	if t < 0 {
		t = 0
	}
	i := c.segment(t)
	p := c.pts[i]
	if i == len(c.pts)-1 {
		return math.Max(0, p.v+c.tail*(t-p.t))
	}
	if !p.linear {
		return p.v
	}
	n := c.pts[i+1]
	return p.v + (n.v-p.v)*(t-p.t)/(n.t-p.t)
}

// segment returns the index of the last point at or before t.
func (c *Piecewise) segment(t float64) int {
	if len(c.pts) == 1 { // a constant or a ramp from its start: what most usage curves are
		return 0
	}
	i := sort.Search(len(c.pts), func(i int) bool { return c.pts[i].t > t }) - 1
	if i < 0 {
		i = 0
	}
	return i
}

// integral returns the area under the curve from start to d, in value·seconds.
func (c *Piecewise) integral(d time.Duration) float64 {
	return c.IntegralCapped(d, math.Inf(1))
}

// IntegralCapped is the area under min(curve, limit) from start to d.
func (c *Piecewise) IntegralCapped(d time.Duration, limit float64) float64 {
	if c == nil {
		return 0
	}
	t := d.Seconds()
	if t <= 0 {
		return 0
	}
	sum := 0.0
	for i, p := range c.pts {
		if p.t >= t {
			break
		}
		end := t
		last := i == len(c.pts)-1
		if !last && c.pts[i+1].t < end {
			end = c.pts[i+1].t
		}
		w := end - p.t
		switch {
		case last:
			v1 := p.v + c.tail*w
			if v1 >= 0 {
				sum += area(p.v, v1, w, limit)
			} else if c.tail != 0 {
				sum += area(p.v, 0, p.v/-c.tail, limit)
			}
		case p.linear:
			n := c.pts[i+1]
			sum += area(p.v, p.v+(n.v-p.v)*w/(n.t-p.t), w, limit)
		default:
			sum += area(p.v, p.v, w, limit)
		}
	}
	return sum
}

// area is the integral of min(f, limit) where f goes linearly from a to b over w.
func area(a, b, w, limit float64) float64 {
	switch {
	case a <= limit && b <= limit:
		return (a + b) / 2 * w
	case a >= limit && b >= limit:
		return limit * w
	}
	x := w * (limit - a) / (b - a)
	if a < limit {
		return (a+limit)/2*x + limit*(w-x)
	}
	return limit*x + (limit+b)/2*(w-x)
}

// FirstReach returns the first time since start at which the curve is at
// least threshold, if it ever is.
func (c *Piecewise) FirstReach(threshold float64) (time.Duration, bool) {
	if c == nil {
		return 0, false
	}
	for i, p := range c.pts {
		if p.v >= threshold {
			return secs(p.t), true
		}
		last := i == len(c.pts)-1
		if last {
			if c.tail > 0 {
				return secs(p.t + (threshold-p.v)/c.tail), true
			}
			return 0, false
		}
		n := c.pts[i+1]
		if p.linear && n.v >= threshold {
			return secs(p.t + (threshold-p.v)*(n.t-p.t)/(n.v-p.v)), true
		}
	}
	return 0, false
}

func secs(s float64) time.Duration {
	d := time.Duration(math.Ceil(s * float64(time.Second)))
	if d < 0 {
		return 0
	}
	return d
}
