package emr_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/laxity-dev/laxity/internal/emr"
)

// What the fake serves, and the credentials it accepts.
const (
	testRegion     = "eu-west-1"
	testVC         = "vc0123456789abcdef0123456"
	testRole       = "arn:aws:iam::123456789012:role/laxity-jobs"
	testRelease    = "emr-7.5.0-latest"
	testCluster    = "analytics"
	testNodegroup  = "spark-workers"
	testAccessKey  = "AKIDLAXITYTEST"
	testSecretKey  = "laxity-test-secret"
	amzDateLayout  = "20060102T150405Z"
	fakeTimeLayout = "2006-01-02T15:04:05Z"
)

// fakeEpoch is when the fake's first job run was created; each later one is
// created a minute after the one before, so that "newest" is well defined
// without a clock.
var fakeEpoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// The operations the fake serves, named as in AWS's API.
const (
	opStartJobRun           = "StartJobRun"
	opDescribeJobRun        = "DescribeJobRun"
	opListJobRuns           = "ListJobRuns"
	opCancelJobRun          = "CancelJobRun"
	opDescribeNodegroup     = "DescribeNodegroup"
	opUpdateNodegroupConfig = "UpdateNodegroupConfig"
)

// fakeAWS serves the REST-JSON calls of EMR on EKS and EKS that package emr
// makes, at the methods and paths of the SDK's serializers, for one virtual
// cluster and one node group. It keeps state (job runs by ID and client
// token, the node group's scaling configuration and whether an update is in
// progress), checks every request's SigV4 signature and the JSON fields it
// carries, and fails calls on demand.
type fakeAWS struct {
	t   *testing.T
	url string

	mu sync.Mutex
	// runs are the job runs in creation order; byToken indexes them by
	// client token.
	runs    []*fakeRun
	byToken map[string]*fakeRun
	// pageSize is how many runs a ListJobRuns page holds when the request
	// does not say.
	pageSize int

	scaling  scalingConfig
	updating bool
	// updateByToken maps UpdateNodegroupConfig's clientRequestToken to the
	// update it started, which a repeated request gets back.
	updateByToken map[string]string

	calls  map[string]int
	faults map[string][]fault
	// starts and updates are the request bodies received, in order.
	starts  []startJobRunRequest
	updates []updateNodegroupConfigRequest
}

// fault fails the next times calls of an operation.
type fault struct {
	times   int
	status  int
	code    string
	message string
}

type fakeRun struct {
	id, name, clientToken string
	request               startJobRunRequest
	state                 string
	stateDetails          string
	failureReason         string
	createdAt             time.Time
	finishedAt            *time.Time
}

// startJobRunRequest is StartJobRun's JSON body; the fake refuses any other
// field.
type startJobRunRequest struct {
	Name             string            `json:"name"`
	ClientToken      string            `json:"clientToken"`
	ExecutionRoleArn string            `json:"executionRoleArn"`
	ReleaseLabel     string            `json:"releaseLabel"`
	JobDriver        jobDriver         `json:"jobDriver"`
	Tags             map[string]string `json:"tags,omitempty"`
}

type jobDriver struct {
	SparkSubmitJobDriver *sparkSubmitJobDriver `json:"sparkSubmitJobDriver,omitempty"`
}

type sparkSubmitJobDriver struct {
	EntryPoint            string   `json:"entryPoint"`
	EntryPointArguments   []string `json:"entryPointArguments,omitempty"`
	SparkSubmitParameters string   `json:"sparkSubmitParameters,omitempty"`
}

// updateNodegroupConfigRequest is UpdateNodegroupConfig's JSON body; the
// fake refuses any other field, such as labels or taints.
type updateNodegroupConfigRequest struct {
	ClientRequestToken string         `json:"clientRequestToken"`
	ScalingConfig      *scalingConfig `json:"scalingConfig"`
}

type scalingConfig struct {
	MinSize     *int32 `json:"minSize,omitempty"`
	MaxSize     *int32 `json:"maxSize,omitempty"`
	DesiredSize *int32 `json:"desiredSize,omitempty"`
}

// newFakeAWS starts a fake, closed when the test ends. Its node group has
// the bounds [0, 20] and the desired size 2.
func newFakeAWS(t *testing.T) *fakeAWS {
	t.Helper()
	f := &fakeAWS{
		t:             t,
		byToken:       map[string]*fakeRun{},
		pageSize:      2,
		scaling:       scalingConfig{MinSize: aws.Int32(0), MaxSize: aws.Int32(20), DesiredSize: aws.Int32(2)},
		updateByToken: map[string]string{},
		calls:         map[string]int{},
		faults:        map[string][]fault{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /virtualclusters/{vc}/jobruns", f.serve(opStartJobRun, "emr-containers", f.startJobRun))
	mux.HandleFunc("GET /virtualclusters/{vc}/jobruns", f.serve(opListJobRuns, "emr-containers", f.listJobRuns))
	mux.HandleFunc("GET /virtualclusters/{vc}/jobruns/{id}", f.serve(opDescribeJobRun, "emr-containers", f.describeJobRun))
	mux.HandleFunc("DELETE /virtualclusters/{vc}/jobruns/{id}", f.serve(opCancelJobRun, "emr-containers", f.cancelJobRun))
	mux.HandleFunc("GET /clusters/{cluster}/node-groups/{nodegroup}", f.serve(opDescribeNodegroup, "eks", f.describeNodegroup))
	mux.HandleFunc("POST /clusters/{cluster}/node-groups/{nodegroup}/update-config", f.serve(opUpdateNodegroupConfig, "eks", f.updateNodegroupConfig))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("fake AWS: unexpected request %s %s", r.Method, r.URL)
		writeError(w, http.StatusNotFound, "UnknownOperationException", "no such operation")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// newClient is a Client of the fake with static credentials and fast
// retries; change adjusts its Config.
func (f *fakeAWS) newClient(t *testing.T, change ...func(*emr.Config)) *emr.Client {
	t.Helper()
	cfg := emr.Config{
		Region:           testRegion,
		Endpoint:         f.url,
		VirtualClusterID: testVC,
		ExecutionRoleARN: testRole,
		ReleaseLabel:     testRelease,
		ClusterName:      testCluster,
		NodegroupName:    testNodegroup,
	}
	for _, c := range change {
		c(&cfg)
	}
	c, err := emr.New(context.Background(), cfg,
		emr.WithCredentials(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey, Source: "test"}, nil
		})),
		emr.WithRetries(4, time.Millisecond))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// fail makes the next times calls of op fail with the given status, AWS
// error code and message.
func (f *fakeAWS) fail(op string, times, status int, code, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[op] = append(f.faults[op], fault{times: times, status: status, code: code, message: message})
}

// callCount is how many calls of op the fake has received, failed ones
// included.
func (f *fakeAWS) callCount(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// setState moves a job run to state, as EMR on EKS would while it runs.
func (f *fakeAWS) setState(id, state, details, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, run := range f.runs {
		if run.id != id {
			continue
		}
		run.state, run.stateDetails, run.failureReason = state, details, reason
		switch state {
		case emr.StateCompleted, emr.StateFailed, emr.StateCancelled:
			finished := run.createdAt.Add(30 * time.Second)
			run.finishedAt = &finished
		}
		return
	}
	f.t.Fatalf("fake AWS: no job run %s", id)
}

// runCount is how many job runs have been started.
func (f *fakeAWS) runCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.runs)
}

// lastStart is the body of the last StartJobRun call that got past the
// faults.
func (f *fakeAWS) lastStart() startJobRunRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.starts) == 0 {
		f.t.Fatal("fake AWS: no StartJobRun received")
	}
	return f.starts[len(f.starts)-1]
}

// lastUpdate is the body of the last UpdateNodegroupConfig call that got
// past the faults.
func (f *fakeAWS) lastUpdate() updateNodegroupConfigRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.updates) == 0 {
		f.t.Fatal("fake AWS: no UpdateNodegroupConfig received")
	}
	return f.updates[len(f.updates)-1]
}

// finishUpdate ends the node group's update in progress.
func (f *fakeAWS) finishUpdate() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updating = false
}

// setMinSize changes the node group's minimum size, as its owner might.
func (f *fakeAWS) setMinSize(n int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scaling.MinSize = &n
}

// desiredSize is the node group's desired size.
func (f *fakeAWS) desiredSize() int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.scaling.DesiredSize
}

// serve counts a call of op, checks its signature for service, applies the
// next fault queued for op, and otherwise hands the call to h.
func (f *fakeAWS) serve(op, service string, h func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls[op]++
		body, err := io.ReadAll(r.Body)
		if err != nil {
			writeError(w, http.StatusBadRequest, "SerializationException", err.Error())
			return
		}
		if err := checkSignature(r, body, service); err != nil {
			f.t.Errorf("fake AWS: %s: %v", op, err)
			writeError(w, http.StatusForbidden, "InvalidSignatureException", err.Error())
			return
		}
		if queue := f.faults[op]; len(queue) > 0 {
			next := &queue[0]
			next.times--
			if next.times <= 0 {
				f.faults[op] = queue[1:]
			}
			writeError(w, next.status, next.code, next.message)
			return
		}
		h(w, r, body)
	}
}

// checkSignature recomputes the request's SigV4 signature with the test
// credentials from the headers it says it signed, and compares it with the
// one it carries.
func checkSignature(r *http.Request, body []byte, service string) error {
	auth := r.Header.Get("Authorization")
	scope := fmt.Sprintf("/%s/%s/aws4_request", testRegion, service)
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential="+testAccessKey+"/") || !strings.Contains(auth, scope) {
		return fmt.Errorf("authorization %q is not a SigV4 signature of %s for %s in %s", auth, testAccessKey, service, testRegion)
	}
	signedAt, err := time.Parse(amzDateLayout, r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("X-Amz-Date: %w", err)
	}
	signedHeaders := regexp.MustCompile(`SignedHeaders=([^,]+)`).FindStringSubmatch(auth)
	if signedHeaders == nil {
		return fmt.Errorf("authorization %q names no signed headers", auth)
	}
	again, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	again.ContentLength = int64(len(body))
	for _, name := range strings.Split(signedHeaders[1], ";") {
		if name != "host" && name != "content-length" {
			again.Header[http.CanonicalHeaderKey(name)] = r.Header.Values(name)
		}
	}
	hash := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(hash[:]), service, testRegion, signedAt); err != nil {
		return err
	}
	if want := again.Header.Get("Authorization"); auth != want {
		return fmt.Errorf("signature mismatch:\n got %s\nwant %s", auth, want)
	}
	return nil
}

// writeError answers as AWS's REST-JSON services do: the error code in
// X-Amzn-ErrorType (with the service's namespace after a colon, which the
// SDK strips) and the message in the JSON body.
func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("X-Amzn-ErrorType", code+":http://internal.amazon.com/coral/com.amazonaws.fake/")
	writeJSON(w, status, map[string]string{"message": message})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decodeStrict decodes body into v, refusing fields v does not have, so that
// a field laxity should not send fails the test.
func (f *fakeAWS) decodeStrict(w http.ResponseWriter, op string, body []byte, v any) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		f.t.Errorf("fake AWS: %s body %s: %v", op, body, err)
		writeError(w, http.StatusBadRequest, "SerializationException", err.Error())
		return false
	}
	return true
}

var releaseLabel = regexp.MustCompile(`^emr-\d+\.\d+\.\d+(-latest)?$`)

func (f *fakeAWS) startJobRun(w http.ResponseWriter, r *http.Request, body []byte) {
	if !f.virtualCluster(w, r) {
		return
	}
	var req startJobRunRequest
	if !f.decodeStrict(w, opStartJobRun, body, &req) {
		return
	}
	f.starts = append(f.starts, req)
	driver := req.JobDriver.SparkSubmitJobDriver
	switch {
	case req.Name == "" || req.ClientToken == "" || req.ExecutionRoleArn == "" || req.ReleaseLabel == "":
		writeError(w, http.StatusBadRequest, "ValidationException", "name, clientToken, executionRoleArn and releaseLabel are required")
		return
	case driver == nil || driver.EntryPoint == "":
		writeError(w, http.StatusBadRequest, "ValidationException", "jobDriver.sparkSubmitJobDriver.entryPoint is required")
		return
	case !releaseLabel.MatchString(req.ReleaseLabel):
		writeError(w, http.StatusBadRequest, "ValidationException", fmt.Sprintf("Release label %s is not valid.", req.ReleaseLabel))
		return
	}
	run, ok := f.byToken[req.ClientToken]
	if !ok {
		run = &fakeRun{
			id:          fmt.Sprintf("%019d", len(f.runs)+1),
			name:        req.Name,
			clientToken: req.ClientToken,
			request:     req,
			state:       emr.StatePending,
			createdAt:   fakeEpoch.Add(time.Duration(len(f.runs)) * time.Minute),
		}
		f.runs = append(f.runs, run)
		f.byToken[req.ClientToken] = run
	}
	writeJSON(w, http.StatusOK, map[string]string{
		"id": run.id, "name": run.name, "arn": runARN(run.id), "virtualClusterId": testVC,
	})
}

func (f *fakeAWS) describeJobRun(w http.ResponseWriter, r *http.Request, _ []byte) {
	if !f.virtualCluster(w, r) {
		return
	}
	run := f.run(w, r.PathValue("id"))
	if run == nil {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobRun": runJSON(run)})
}

// listJobRuns pages through the runs oldest first, and matches names by
// prefix: looser than the service may be, so that the client's own choice
// of the newest exact match is what the tests see.
func (f *fakeAWS) listJobRuns(w http.ResponseWriter, r *http.Request, _ []byte) {
	if !f.virtualCluster(w, r) {
		return
	}
	q := r.URL.Query()
	var matching []*fakeRun
	for _, run := range f.runs {
		if strings.HasPrefix(run.name, q.Get("name")) {
			matching = append(matching, run)
		}
	}
	size := f.pageSize
	if s := q.Get("maxResults"); s != "" {
		var err error
		if size, err = strconv.Atoi(s); err != nil || size < 1 {
			writeError(w, http.StatusBadRequest, "ValidationException", "maxResults must be a positive integer")
			return
		}
	}
	from := 0
	if token := q.Get("nextToken"); token != "" {
		var err error
		if from, err = strconv.Atoi(strings.TrimPrefix(token, "page-")); err != nil || from > len(matching) {
			writeError(w, http.StatusBadRequest, "ValidationException", "invalid nextToken")
			return
		}
	}
	to := min(from+size, len(matching))
	page := []map[string]any{}
	for _, run := range matching[from:to] {
		page = append(page, runJSON(run))
	}
	out := map[string]any{"jobRuns": page}
	if to < len(matching) {
		out["nextToken"] = fmt.Sprintf("page-%d", to)
	}
	writeJSON(w, http.StatusOK, out)
}

func (f *fakeAWS) cancelJobRun(w http.ResponseWriter, r *http.Request, _ []byte) {
	if !f.virtualCluster(w, r) {
		return
	}
	run := f.run(w, r.PathValue("id"))
	if run == nil {
		return
	}
	switch run.state {
	case emr.StateCompleted, emr.StateFailed, emr.StateCancelled, emr.StateCancelPending:
		writeError(w, http.StatusBadRequest, "ValidationException",
			fmt.Sprintf("Job run %s is in state %s and cannot be cancelled.", run.id, run.state))
		return
	}
	run.state = emr.StateCancelPending
	writeJSON(w, http.StatusOK, map[string]string{"id": run.id, "virtualClusterId": testVC})
}

// virtualCluster checks the request's virtual cluster, answering
// ResourceNotFoundException for any other.
func (f *fakeAWS) virtualCluster(w http.ResponseWriter, r *http.Request) bool {
	if vc := r.PathValue("vc"); vc != testVC {
		writeError(w, http.StatusNotFound, "ResourceNotFoundException", fmt.Sprintf("Virtual cluster %s doesn't exist.", vc))
		return false
	}
	return true
}

// run is the job run with the given ID, or nil after answering
// ResourceNotFoundException.
func (f *fakeAWS) run(w http.ResponseWriter, id string) *fakeRun {
	for _, run := range f.runs {
		if run.id == id {
			return run
		}
	}
	writeError(w, http.StatusNotFound, "ResourceNotFoundException", fmt.Sprintf("Job run %s doesn't exist.", id))
	return nil
}

func runARN(id string) string {
	return fmt.Sprintf("arn:aws:emr-containers:%s:123456789012:/virtualclusters/%s/jobruns/%s", testRegion, testVC, id)
}

// runJSON is a JobRun as DescribeJobRun and ListJobRuns return it.
func runJSON(run *fakeRun) map[string]any {
	out := map[string]any{
		"id":               run.id,
		"name":             run.name,
		"arn":              runARN(run.id),
		"virtualClusterId": testVC,
		"clientToken":      run.clientToken,
		"executionRoleArn": run.request.ExecutionRoleArn,
		"releaseLabel":     run.request.ReleaseLabel,
		"jobDriver":        run.request.JobDriver,
		"state":            run.state,
		"createdAt":        run.createdAt.Format(fakeTimeLayout),
		"createdBy":        "arn:aws:sts::123456789012:assumed-role/laxity/operator",
		"tags":             run.request.Tags,
	}
	if run.finishedAt != nil {
		out["finishedAt"] = run.finishedAt.Format(fakeTimeLayout)
	}
	if run.stateDetails != "" {
		out["stateDetails"] = run.stateDetails
	}
	if run.failureReason != "" {
		out["failureReason"] = run.failureReason
	}
	return out
}

func (f *fakeAWS) describeNodegroup(w http.ResponseWriter, r *http.Request, _ []byte) {
	if !f.nodegroup(w, r) {
		return
	}
	status := "ACTIVE"
	if f.updating {
		status = "UPDATING"
	}
	writeJSON(w, http.StatusOK, map[string]any{"nodegroup": map[string]any{
		"nodegroupName": testNodegroup,
		"clusterName":   testCluster,
		"status":        status,
		"scalingConfig": f.scaling,
	}})
}

func (f *fakeAWS) updateNodegroupConfig(w http.ResponseWriter, r *http.Request, body []byte) {
	if !f.nodegroup(w, r) {
		return
	}
	var req updateNodegroupConfigRequest
	if !f.decodeStrict(w, opUpdateNodegroupConfig, body, &req) {
		return
	}
	f.updates = append(f.updates, req)
	if id, ok := f.updateByToken[req.ClientRequestToken]; ok && req.ClientRequestToken != "" {
		writeJSON(w, http.StatusOK, updateJSON(id))
		return
	}
	if f.updating {
		writeError(w, http.StatusConflict, "ResourceInUseException",
			fmt.Sprintf("Nodegroup %s cannot be updated as it is currently not in Active State", testNodegroup))
		return
	}
	s := req.ScalingConfig
	if s == nil || s.MinSize == nil || s.MaxSize == nil || s.DesiredSize == nil {
		writeError(w, http.StatusBadRequest, "InvalidParameterException", "scalingConfig needs minSize, maxSize and desiredSize")
		return
	}
	if *s.DesiredSize < *s.MinSize || *s.DesiredSize > *s.MaxSize {
		writeError(w, http.StatusBadRequest, "InvalidParameterException",
			fmt.Sprintf("Desired capacity:%d can't be greater than max size:%d or less than min size:%d", *s.DesiredSize, *s.MaxSize, *s.MinSize))
		return
	}
	f.scaling = *s
	f.updating = true
	id := fmt.Sprintf("update-%d", len(f.updateByToken)+1)
	f.updateByToken[req.ClientRequestToken] = id
	writeJSON(w, http.StatusOK, updateJSON(id))
}

// nodegroup checks the request's cluster and node group, answering
// ResourceNotFoundException for any other.
func (f *fakeAWS) nodegroup(w http.ResponseWriter, r *http.Request) bool {
	if r.PathValue("cluster") != testCluster || r.PathValue("nodegroup") != testNodegroup {
		writeError(w, http.StatusNotFound, "ResourceNotFoundException",
			fmt.Sprintf("No node group found for name: %s.", r.PathValue("nodegroup")))
		return false
	}
	return true
}

func updateJSON(id string) map[string]any {
	return map[string]any{"update": map[string]any{"id": id, "status": "InProgress", "type": "ConfigUpdate"}}
}
