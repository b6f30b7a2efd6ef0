package standin

import (
	"context"
	"math"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSlower(t *testing.T) {
	modelled := func(context.Context, metav1.Object) (time.Duration, error) { return 100 * time.Second, nil }
	app := func(name string) metav1.Object { return &metav1.ObjectMeta{Namespace: "analytics", Name: name} }
	ctx := context.Background()

	d, _ := Slower(modelled, 0.4, 0, 0)(ctx, app("q1-batch-0"))
	if d != 140*time.Second {
		t.Errorf("a 40%% slowdown takes %s, want 2m20s", d)
	}
	d, _ = Slower(modelled, -0.99, 0, 0)(ctx, app("q1-batch-0"))
	if d != 10*time.Second {
		t.Errorf("a step never takes less than a tenth of its model: got %s", d)
	}
	noisy := Slower(modelled, 0, 0.15, 0.10)
	first, _ := noisy(ctx, app("q1-batch-0"))
	again, _ := noisy(ctx, app("q1-batch-0"))
	if first != again {
		t.Errorf("the same application drew %s, then %s", first, again)
	}
	var sum, sumSq float64
	const n = 2000
	for i := range n {
		d, _ := noisy(ctx, app("q1-batch-"+time.Duration(i).String()))
		f := d.Seconds()/100 - 1
		sum, sumSq = sum+f, sumSq+f*f
	}
	mean := sum / n
	sd := math.Sqrt(sumSq/n - mean*mean)
	if math.Abs(mean-0.15) > 0.01 || math.Abs(sd-0.10) > 0.01 {
		t.Errorf("noise N(15%%, 10%%) drew mean %.3f, sd %.3f", mean, sd)
	}
}
