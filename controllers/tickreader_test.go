package controllers

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

// tickReader is the stories' client for one round of query reconciles
// (world.reconcileQueries): it reads what the queries share — their
// schedule, its plan, its steps — from the API server once for the round,
// as the manager's cache does, instead of once for each query. Queries are
// read through, since each query's reconcile writes its own; any other
// write forgets what was read. Callers get copies.
type tickReader struct {
	client.Client
	read   map[string]client.Object
	listed map[string]client.ObjectList
}

func newTickReader(c client.Client) *tickReader {
	return &tickReader{Client: c, read: map[string]client.Object{}, listed: map[string]client.ObjectList{}}
}

// through reports whether obj (or a list of them) is read from the API
// server every time.
func through(obj any) bool {
	switch obj.(type) {
	case *laxityv1alpha1.IntermittentQuery, *laxityv1alpha1.IntermittentQueryList:
		return true
	}
	return false
}

func (t *tickReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if through(obj) || len(opts) > 0 {
		return t.Client.Get(ctx, key, obj, opts...)
	}
	gvk, err := t.GroupVersionKindFor(obj)
	if err != nil {
		return err
	}
	id := fmt.Sprintf("%T %s %s", obj, gvk, key)
	if got, ok := t.read[id]; ok {
		copyInto(obj, got)
		return nil
	}
	if err := t.Client.Get(ctx, key, obj); err != nil {
		return err
	}
	t.read[id] = obj.DeepCopyObject().(client.Object)
	return nil
}

func (t *tickReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if through(list) {
		return t.Client.List(ctx, list, opts...)
	}
	gvk, err := t.GroupVersionKindFor(list)
	if err != nil {
		return err
	}
	var o client.ListOptions
	o.ApplyOptions(opts)
	id := fmt.Sprintf("%T %s %s %v %v", list, gvk, o.Namespace, o.LabelSelector, o.FieldSelector)
	if got, ok := t.listed[id]; ok {
		copyInto(list, got)
		return nil
	}
	if err := t.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	t.listed[id] = list.DeepCopyObject().(client.ObjectList)
	return nil
}

func (t *tickReader) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	t.forget()
	return t.Client.Create(ctx, obj, opts...)
}

func (t *tickReader) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	t.forget()
	return t.Client.Update(ctx, obj, opts...)
}

func (t *tickReader) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	t.forget()
	return t.Client.Patch(ctx, obj, patch, opts...)
}

func (t *tickReader) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	t.forget()
	return t.Client.Delete(ctx, obj, opts...)
}

func (t *tickReader) forget() {
	clear(t.read)
	clear(t.listed)
}

// copyInto sets *dst to a deep copy of src, of the same type.
func copyInto(dst, src runtime.Object) {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src.DeepCopyObject()).Elem())
}
