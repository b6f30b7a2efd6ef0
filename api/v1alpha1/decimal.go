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
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Decimal is a number in a status, such as a cost or a slack in seconds.
// On the wire it is a JSON number, so that kubectl prints it in a number
// column and sorts by it as a number (kubectl get --sort-by); in Go it is
// kept as the decimal text the API server returns, so that a status read
// back compares equal to the one written and rounding never drifts.
// NewDecimal makes one. It also decodes from a JSON string, as statuses
// written before these fields were numbers hold them.
// +kubebuilder:validation:Type=number
type Decimal string

// NewDecimal is v rounded to places decimal places, written as the API
// server writes a number back (no trailing zeros: 0.7, not 0.7000). It is
// empty, so left out of the status, when v is not a finite number.
func NewDecimal(v float64, places int) Decimal {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	scale := math.Pow10(places)
	rounded := math.Round(v*scale) / scale
	if rounded == 0 {
		rounded = 0 // no "-0"
	}
	// Go's JSON encoder, which the API server re-encodes numbers with,
	// writes this shortest form for the magnitudes a status holds.
	return Decimal(strconv.FormatFloat(rounded, 'f', -1, 64))
}

// Float64 is the number d holds; an error when d is not a number.
func (d Decimal) Float64() (float64, error) {
	v, err := strconv.ParseFloat(string(d), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a decimal number", string(d))
	}
	return v, nil
}

// MarshalJSON writes d as a JSON number.
func (d Decimal) MarshalJSON() ([]byte, error) {
	if !isJSONNumber(string(d)) {
		return nil, fmt.Errorf("v1alpha1.Decimal: %q is not a decimal number", string(d))
	}
	return []byte(d), nil
}

// UnmarshalJSON reads a JSON number, or a JSON string holding one, as
// objects written before the field was a number hold it.
func (d *Decimal) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, []byte("null")) {
		*d = ""
		return nil
	}
	text := string(data)
	if len(data) > 0 && data[0] == '"' {
		if err := json.Unmarshal(data, &text); err != nil {
			return err
		}
		if text == "" {
			*d = ""
			return nil
		}
	}
	if !isJSONNumber(text) {
		return fmt.Errorf("v1alpha1.Decimal: %q is not a decimal number", text)
	}
	*d = Decimal(text)
	return nil
}

// isJSONNumber reports whether s is a JSON number, such as -12.5 or 1e3
// (not NaN, Inf, hexadecimal or a quoted string, which ParseFloat takes).
func isJSONNumber(s string) bool {
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) || !json.Valid([]byte(s)) {
		return false
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}
