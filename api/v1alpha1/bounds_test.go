/*
Copyright 2026 The laxity Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	"math"
	"strings"
	"testing"
)

func TestParseDecimal(t *testing.T) {
	const field = "spec.input.ratePerSecond"
	for _, tt := range []struct {
		in      string
		limit   float64
		want    float64
		wantErr string // "" for success
	}{
		{"9500", 1e12, 9500, ""},
		{"+2.5", 10, 2.5, ""},
		{".5", 10, 0.5, ""},
		{"5.", 10, 5, ""},
		{"2e-8", 1, 2e-8, ""},
		{"1e-400", 1, 0, ""}, // underflows to 0, as CEL's double() does
		{"0", 1, 0, ""},
		{"1e12", 1e12, 1e12, ""},
		{"1000000000000", 1e12, 1e12, ""},
		{"1000000000000.0001", 1e12, 0, "is more than 1e+12"},
		{"1.000001e12", 1e12, 0, "is more than 1e+12"},
		{"1e308", 1e12, 0, "is out of range"},
		{"1e400", 1e12, 0, "is out of range"},
		{"0e100", 1e12, 0, "is out of range"},
		{"", 1, 0, "required"},
		{"NaN", 1, 0, "must be a finite non-negative number"},
		{"nan", 1, 0, "must be a finite non-negative number"},
		{"Inf", 1, 0, "must be a finite non-negative number"},
		{"+Inf", 1, 0, "must be a finite non-negative number"},
		{"-Infinity", 1, 0, "must be a finite non-negative number"},
		{"-1", 1, 0, "must be a finite non-negative number"},
		{"-0.5e3", 1e6, 0, "must be a finite non-negative number"},
		{"0x1p3", 1e6, 0, "is not a number"},
		{"1_000", 1e6, 0, "is not a number"},
		{"cheap", 1, 0, `"cheap" is not a number`},
		{" 1", 1, 0, "is not a number"},
	} {
		got, err := ParseDecimal(field, tt.in, tt.limit)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("ParseDecimal(%q, %g): %v", tt.in, tt.limit, err)
		case tt.wantErr == "" && got != tt.want:
			t.Errorf("ParseDecimal(%q, %g) = %g, want %g", tt.in, tt.limit, got, tt.want)
		case tt.wantErr != "" && err == nil:
			t.Errorf("ParseDecimal(%q, %g) = %g, want an error containing %q", tt.in, tt.limit, got, tt.wantErr)
		case tt.wantErr != "" && (!strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), field+": ")):
			t.Errorf("ParseDecimal(%q, %g): %v, want an error on %s containing %q", tt.in, tt.limit, err, field, tt.wantErr)
		}
	}
}

// FuzzParseDecimal: whatever the input, an accepted value is finite,
// within [0, limit] and has the CRD rule's syntax.
func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"9500", "2e-8", "1e12", "1e999", "NaN", "-1", "0x1p3", ".5", "1e-400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseDecimal("f", s, 1e12)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f: ") {
				t.Fatalf("ParseDecimal(%q): error %q does not name the field", s, err)
			}
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1e12 {
			t.Fatalf("ParseDecimal(%q) = %g", s, v)
		}
		if !decimalPattern.MatchString(s) || hugeExponent.MatchString(s) {
			t.Fatalf("ParseDecimal(%q) accepted what the CRD rule rejects", s)
		}
	})
}
