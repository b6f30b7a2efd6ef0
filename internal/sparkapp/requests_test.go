package sparkapp

import "testing"

func TestSparkMiB(t *testing.T) {
	for in, want := range map[string]int64{"512m": 512, "2g": 2048, "2G": 2048, "1024": 1024, "2048k": 2, "1k": 1, "1t": 1 << 20, "3gb": 3072} {
		got, err := sparkMiB(in)
		if err != nil || got != want {
			t.Errorf("sparkMiB(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "abc", "0g", "-1g", "1.5g", "99999999999999g", "1x", "1 g g"} {
		if got, err := sparkMiB(in); err == nil {
			t.Errorf("sparkMiB(%q) = %d, want an error", in, got)
		}
	}
}

func TestRequests(t *testing.T) {
	mem := func(role map[string]any, appType string) string {
		q, err := memoryRequest(role, "spec.executor", appType)
		if err != nil {
			t.Fatalf("memoryRequest(%v): %v", role, err)
		}
		return q.String()
	}
	for _, c := range []struct {
		role    map[string]any
		appType string
		want    string
	}{
		{map[string]any{}, "Scala", "1408Mi"},
		{map[string]any{"memory": "2g"}, "Scala", "2432Mi"},
		{map[string]any{"memory": "8g"}, "Java", "9011Mi"},
		{map[string]any{"memory": "2g"}, "Python", "2867Mi"},
		{map[string]any{"memory": "2g", "memoryOverhead": "1g"}, "Scala", "3Gi"},
	} {
		if got := mem(c.role, c.appType); got != c.want {
			t.Errorf("memory request of %v (%s) = %s, want %s", c.role, c.appType, got, c.want)
		}
	}
	if _, err := memoryRequest(map[string]any{"memory": "lots"}, "spec.driver", ""); err == nil {
		t.Error("a malformed memory size is accepted")
	}

	cpu := func(role map[string]any) (string, error) {
		q, err := cpuRequest(role, "spec.driver")
		return q.String(), err
	}
	for _, c := range []struct {
		role map[string]any
		want string
	}{
		{map[string]any{}, "1"},
		{map[string]any{"cores": int64(3)}, "3"},
		{map[string]any{"cores": float64(2)}, "2"},
		{map[string]any{"cores": int64(3), "coreRequest": "500m"}, "500m"},
	} {
		if got, err := cpu(c.role); err != nil || got != c.want {
			t.Errorf("cpu request of %v = %s, %v; want %s", c.role, got, err, c.want)
		}
	}
	for _, role := range []map[string]any{{"cores": int64(0)}, {"cores": "two"}, {"cores": 1.5}, {"coreRequest": "-1"}, {"coreRequest": "x"}} {
		if got, err := cpu(role); err == nil {
			t.Errorf("cpu request of %v = %s, want an error", role, got)
		}
	}
}
