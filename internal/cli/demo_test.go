package cli

import (
	"strings"
	"testing"
)

func TestParseNoise(t *testing.T) {
	for _, tc := range []struct {
		in       string
		mean, sd float64
		err      string
	}{
		{in: ""},
		{in: "15,10", mean: 0.15, sd: 0.10},
		{in: " -5 , 0 ", mean: -0.05},
		{in: "15", err: "is not MEAN,SD"},
		{in: "a,b", err: "is not MEAN,SD"},
		{in: "15,-1", err: "standard deviation"},
		{in: "-95,1", err: "mean"},
		{in: "NaN,1", err: "mean"},
	} {
		mean, sd, err := parseNoise(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--noise")):
			t.Errorf("parseNoise(%q) error %v, want one naming --noise and saying %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || mean != tc.mean || sd != tc.sd):
			t.Errorf("parseNoise(%q) = %g, %g, %v; want %g, %g", tc.in, mean, sd, err, tc.mean, tc.sd)
		}
	}
}
