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
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
)

// Tolerant decoding.
//
// An object stored before the CRDs' current bounds (an older CRD, storage
// edited by hand) may hold a value the Go types cannot take: a duration
// beyond time.Duration, a number beyond int32, a string where a number
// belongs. Decoding such an object strictly would fail the decoding of the
// whole LIST or WATCH response it is part of, so that no object of its kind
// could be reconciled anywhere in the cluster. ElasticSchedule and
// IntermittentQuery therefore decode tolerantly: when their strict decoding
// fails they keep their TypeMeta, their ObjectMeta and whatever of their
// status decodes, leave their spec empty, and record why in Undecodable.
// Callers must check DecodeError before using the spec.

// DecodeFailure says why an object could not be decoded into its Go type.
// It is never sent to the API server.
type DecodeFailure struct {
	// Field is the path of the first field that could not be decoded, such
	// as spec.nodePool.provisioningLeadTime, or "" when the object as a whole
	// is malformed.
	Field string
	// Message is the decoder's error for that field, such as
	// `time: invalid duration "3000000h"`.
	Message string
}

// Error says which field could not be decoded and why.
func (f *DecodeFailure) Error() string {
	if f.Field == "" {
		return "cannot be decoded: " + f.Message
	}
	return fmt.Sprintf("%s: cannot be decoded: %s", f.Field, f.Message)
}

// DecodeError is nil when the schedule decoded, and otherwise a
// *DecodeFailure naming the field that did not: the spec is then empty and
// must not be used.
func (in *ElasticSchedule) DecodeError() error {
	if in.Undecodable == nil {
		return nil
	}
	return in.Undecodable
}

// DecodeError is nil when the query decoded, and otherwise a
// *DecodeFailure naming the field that did not: the spec is then empty
// (except scheduleName, when it decodes) and must not be used.
func (in *IntermittentQuery) DecodeError() error {
	if in.Undecodable == nil {
		return nil
	}
	return in.Undecodable
}

// UnmarshalJSON decodes an ElasticSchedule. When the object is not a
// well-formed ElasticSchedule it keeps TypeMeta, ObjectMeta and what
// decodes of the status, and records the failure in Undecodable; it fails
// only when not even the metadata decodes.
func (in *ElasticSchedule) UnmarshalJSON(data []byte) error {
	type plain ElasticSchedule // no methods: no recursion
	var obj plain
	err := kjson.UnmarshalCaseSensitivePreserveInts(data, &obj)
	if err == nil {
		*in = ElasticSchedule(obj)
		return nil
	}
	env, envErr := decodeEnvelope(data)
	if envErr != nil {
		return err
	}
	out := ElasticSchedule{TypeMeta: env.TypeMeta, ObjectMeta: env.ObjectMeta}
	decodeBestEffort(env.Status, &out.Status)
	out.Undecodable = locate(data, reflect.TypeFor[plain](), "", err)
	*in = out
	return nil
}

// UnmarshalJSON decodes an IntermittentQuery. When the object is not a
// well-formed IntermittentQuery it keeps TypeMeta, ObjectMeta, what decodes
// of the status and spec.scheduleName (so that the schedule can tell the
// query is there), and records the failure in Undecodable; it fails only
// when not even the metadata decodes.
func (in *IntermittentQuery) UnmarshalJSON(data []byte) error {
	type plain IntermittentQuery // no methods: no recursion
	var obj plain
	err := kjson.UnmarshalCaseSensitivePreserveInts(data, &obj)
	if err == nil {
		*in = IntermittentQuery(obj)
		return nil
	}
	env, envErr := decodeEnvelope(data)
	if envErr != nil {
		return err
	}
	out := IntermittentQuery{TypeMeta: env.TypeMeta, ObjectMeta: env.ObjectMeta}
	decodeBestEffort(env.Status, &out.Status)
	var spec struct {
		ScheduleName json.RawMessage `json:"scheduleName"`
	}
	if kjson.UnmarshalCaseSensitivePreserveInts(env.Spec, &spec) == nil {
		_ = kjson.UnmarshalCaseSensitivePreserveInts(spec.ScheduleName, &out.Spec.ScheduleName)
	}
	out.Undecodable = locate(data, reflect.TypeFor[plain](), "", err)
	*in = out
	return nil
}

// envelope is the part of an object that must decode for the object to be
// reported at all.
type envelope struct {
	metav1.TypeMeta `json:",inline"`
	ObjectMeta      metav1.ObjectMeta `json:"metadata"`
	Spec            json.RawMessage   `json:"spec"`
	Status          json.RawMessage   `json:"status"`
}

func decodeEnvelope(data []byte) (envelope, error) {
	var env envelope
	err := kjson.UnmarshalCaseSensitivePreserveInts(data, &env)
	return env, err
}

// decodeBestEffort decodes raw into the struct out points to, field by
// field, keeping the zero value of every field that does not decode.
func decodeBestEffort(raw json.RawMessage, out any) {
	if len(raw) == 0 || kjson.UnmarshalCaseSensitivePreserveInts(raw, out) == nil {
		return
	}
	v := reflect.ValueOf(out).Elem()
	v.SetZero()
	var fields map[string]json.RawMessage
	if kjson.UnmarshalCaseSensitivePreserveInts(raw, &fields) != nil {
		return
	}
	for _, f := range jsonFields(v.Type()) {
		fraw, ok := fields[f.name]
		if !ok {
			continue
		}
		p := reflect.New(f.field.Type)
		if kjson.UnmarshalCaseSensitivePreserveInts(fraw, p.Interface()) == nil {
			v.FieldByIndex(f.field.Index).Set(p.Elem())
		}
	}
}

type jsonField struct {
	name  string
	field reflect.StructField
}

// jsonFields lists the JSON object members of a struct type, with the
// members of inlined (embedded or ",inline") structs flattened.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		inline := strings.Contains(","+opts+",", ",inline,") || (f.Anonymous && name == "")
		if inline && f.Type.Kind() == reflect.Struct {
			for _, sub := range jsonFields(f.Type) {
				sub.field.Index = append([]int{i}, sub.field.Index...)
				out = append(out, sub)
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name: name, field: f})
	}
	return out
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// locate finds the first field of data, decoded as type t at path, that
// fails to decode, and returns it with its error; whole is the error of
// decoding the whole value, reported when no part of it can be blamed.
func locate(data []byte, t reflect.Type, path string, whole error) *DecodeFailure {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if string(data) == "null" {
		return &DecodeFailure{Field: path, Message: whole.Error()}
	}
	custom := reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)
	switch {
	case custom:
		// A leaf such as metav1.Duration or metav1.Time.
	case t.Kind() == reflect.Struct:
		var fields map[string]json.RawMessage
		if kjson.UnmarshalCaseSensitivePreserveInts(data, &fields) != nil {
			return &DecodeFailure{Field: path, Message: leafMessage(whole)}
		}
		for _, f := range jsonFields(t) {
			raw, ok := fields[f.name]
			if !ok {
				continue
			}
			if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, reflect.New(f.field.Type).Interface()); err != nil {
				return locate(raw, f.field.Type, join(path, f.name), err)
			}
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		var items []json.RawMessage
		if kjson.UnmarshalCaseSensitivePreserveInts(data, &items) != nil {
			return &DecodeFailure{Field: path, Message: leafMessage(whole)}
		}
		for i, raw := range items {
			if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, reflect.New(t.Elem()).Interface()); err != nil {
				return locate(raw, t.Elem(), path+"["+strconv.Itoa(i)+"]", err)
			}
		}
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		var items map[string]json.RawMessage
		if kjson.UnmarshalCaseSensitivePreserveInts(data, &items) != nil {
			return &DecodeFailure{Field: path, Message: leafMessage(whole)}
		}
		for _, k := range slices.Sorted(maps.Keys(items)) {
			raw := items[k]
			if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, reflect.New(t.Elem()).Interface()); err != nil {
				return locate(raw, t.Elem(), path+"["+strconv.Quote(k)+"]", err)
			}
		}
	}
	return &DecodeFailure{Field: path, Message: leafMessage(whole)}
}

// leafMessage drops the Go struct names encoding/json puts in a type error
// ("json: cannot unmarshal string into Go struct field NodePool.spec.nodePool.sizes of type int32"),
// keeping what was found and what was wanted.
func leafMessage(err error) string {
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) || typeErr.Type == nil {
		return err.Error()
	}
	return fmt.Sprintf("a JSON %s cannot be decoded as %s", typeErr.Value, typeErr.Type)
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
