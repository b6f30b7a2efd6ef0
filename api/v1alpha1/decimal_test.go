package v1alpha1

import (
	"encoding/json"
	"math"
	"testing"
)

func TestNewDecimalIsWhatTheAPIServerWritesBack(t *testing.T) {
	for _, tc := range []struct {
		v      float64
		places int
		want   Decimal
	}{
		{0.7, 4, "0.7"},
		{0.70004, 4, "0.7"},
		{1.31, 2, "1.31"},
		{2, 2, "2"},
		{168.24, 1, "168.2"},
		{-12.25, 1, "-12.3"},
		{-0.01, 1, "0"},
		{math.NaN(), 2, ""},
		{math.Inf(1), 2, ""},
	} {
		got := NewDecimal(tc.v, tc.places)
		if got != tc.want {
			t.Errorf("NewDecimal(%g, %d) = %q, want %q", tc.v, tc.places, got, tc.want)
			continue
		}
		if got == "" {
			continue
		}
		// A number the API server decodes and encodes again is unchanged.
		data, err := json.Marshal(got)
		if err != nil {
			t.Fatalf("Marshal(%q): %v", got, err)
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatal(err)
		}
		again, _ := json.Marshal(v)
		if string(again) != string(got) {
			t.Errorf("%q re-encodes as %s", got, again)
		}
	}
}

func TestDecimalJSON(t *testing.T) {
	type holder struct {
		D Decimal `json:"d,omitempty"`
	}
	for _, tc := range []struct {
		in      string
		want    Decimal
		wantErr bool
		out     string
	}{
		{in: `{"d":0.94}`, want: "0.94", out: `{"d":0.94}`},
		{in: `{"d":-3}`, want: "-3", out: `{"d":-3}`},
		{in: `{"d":"168.2"}`, want: "168.2", out: `{"d":168.2}`},
		{in: `{"d":""}`, want: "", out: `{}`},
		{in: `{"d":null}`, want: "", out: `{}`},
		{in: `{}`, want: "", out: `{}`},
		{in: `{"d":"NaN"}`, wantErr: true},
		{in: `{"d":"0x10"}`, wantErr: true},
		{in: `{"d":true}`, wantErr: true},
	} {
		var h holder
		err := json.Unmarshal([]byte(tc.in), &h)
		if (err != nil) != tc.wantErr {
			t.Errorf("Unmarshal(%s) error = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if tc.wantErr {
			continue
		}
		if h.D != tc.want {
			t.Errorf("Unmarshal(%s) = %q, want %q", tc.in, h.D, tc.want)
		}
		out, err := json.Marshal(h)
		if err != nil || string(out) != tc.out {
			t.Errorf("Marshal(%q) = %s, %v; want %s", h.D, out, err, tc.out)
		}
	}
	if _, err := json.Marshal(holder{D: "1.2.3"}); err == nil {
		t.Error("Marshal of a Decimal that is not a number did not fail")
	}
	if v, err := Decimal("0.25").Float64(); err != nil || v != 0.25 {
		t.Errorf(`Decimal("0.25").Float64() = %g, %v`, v, err)
	}
	if _, err := Decimal("").Float64(); err == nil {
		t.Error(`Decimal("").Float64() did not fail`)
	}
}
