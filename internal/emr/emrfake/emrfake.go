// Package emrfake is an in-process fake of the EMR on EKS and EKS APIs that
// package emr calls, so that its tests and the controllers' envtest stories
// can run a backend end to end without AWS.
//
// A Server serves the REST-JSON calls of one virtual cluster and one node
// group at the methods and paths of the SDK's serializers. It keeps state
// (job runs by ID and client token, the node group's scaling configuration
// and whether an update is in progress), checks every request's SigV4
// signature and the JSON fields it carries, and fails calls on demand. A
// request it does not expect fails the test.
package emrfake

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
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/laxity-dev/laxity/internal/emr"
)

// What the fake serves, and the credentials it accepts: a Config or a
// request naming anything else is refused as AWS would refuse it.
const (
	// Region is the only region the fake accepts signatures for.
	Region = "eu-west-1"
	// VirtualClusterID is the only virtual cluster the fake serves.
	VirtualClusterID = "vc0123456789abcdef0123456"
	// ExecutionRoleARN is the role Config puts in the job runs.
	ExecutionRoleARN = "arn:aws:iam::123456789012:role/laxity-jobs"
	// ReleaseLabel is the EMR release Config puts in the job runs.
	ReleaseLabel = "emr-7.5.0-latest"
	// ClusterName is the only EKS cluster the fake serves.
	ClusterName = "analytics"
	// NodegroupName is the only node group of ClusterName the fake serves.
	NodegroupName = "spark-workers"
	// AccessKeyID is the access key the fake checks signatures with.
	AccessKeyID = "AKIDLAXITYTEST"
	// SecretAccessKey is the secret key the fake checks signatures with.
	SecretAccessKey = "laxity-test-secret"
)

// The operations the fake serves, named as in AWS's API, for Fail and
// CallCount.
const (
	// OpStartJobRun is EMR on EKS's StartJobRun.
	OpStartJobRun = "StartJobRun"
	// OpDescribeJobRun is EMR on EKS's DescribeJobRun.
	OpDescribeJobRun = "DescribeJobRun"
	// OpListJobRuns is EMR on EKS's ListJobRuns.
	OpListJobRuns = "ListJobRuns"
	// OpCancelJobRun is EMR on EKS's CancelJobRun.
	OpCancelJobRun = "CancelJobRun"
	// OpDescribeNodegroup is EKS's DescribeNodegroup.
	OpDescribeNodegroup = "DescribeNodegroup"
	// OpUpdateNodegroupConfig is EKS's UpdateNodegroupConfig.
	OpUpdateNodegroupConfig = "UpdateNodegroupConfig"
)

const (
	amzDateLayout = "20060102T150405Z"
	// timeLayout is a JSON timestamp as the SDK parses it; fractions of a
	// second survive, so a clock's times reach the client unchanged.
	timeLayout = "2006-01-02T15:04:05.999999999Z"
)

// fakeEpoch is when the fake's first job run is created without a clock;
// each later one is created a minute after the one before, so that "newest"
// is well defined.
var fakeEpoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// Server is a running fake. Its methods are safe for concurrent use, so a
// test can read and steer it while a controller calls it.
type Server struct {
	t   TB
	url string

	mu sync.Mutex
	// now, when set, dates job runs and updates; see SetClock.
	now func() time.Time
	// runs are the job runs in creation order; byToken indexes them by
	// client token.
	runs    []*Run
	byToken map[string]*Run
	// pageSize is how many runs a ListJobRuns page holds when the request
	// does not say.
	pageSize int

	scaling  ScalingConfig
	updating bool
	// updatesCompleteAtOnce keeps updates from leaving the node group
	// updating; see SetUpdatesCompleteAtOnce.
	updatesCompleteAtOnce bool
	// updateByToken maps UpdateNodegroupConfig's clientRequestToken to the
	// update it started, which a repeated request gets back.
	updateByToken map[string]string

	calls  map[string]int
	faults map[string][]fault
	// starts and updates are the request bodies received, in order;
	// updateLog is updates as Updates reports them.
	starts    []StartJobRunRequest
	updates   []UpdateNodegroupConfigRequest
	updateLog []Update
}

// fault fails the next times calls of an operation.
type fault struct {
	times   int
	status  int
	code    string
	message string
}

// Run is a job run as the fake keeps it, for a test to check what was
// started and how it ended.
type Run struct {
	ID, Name, ClientToken string
	State                 string
	StateDetails          string
	FailureReason         string
	// Request is the StartJobRun body that created the run.
	Request StartJobRunRequest
	// CreatedAt and FinishedAt are what DescribeJobRun reports; FinishedAt
	// is nil until the run ends.
	CreatedAt  time.Time
	FinishedAt *time.Time
}

// Update is an UpdateNodegroupConfig the fake received, for a test to
// follow how a node group was resized over time.
type Update struct {
	// At is the clock's time of the call, zero without a clock.
	At time.Time
	// DesiredSize, MinSize and MaxSize are the request's scaling
	// configuration, zero where it had none.
	DesiredSize, MinSize, MaxSize int32
}

// StartJobRunRequest is StartJobRun's JSON body; the fake refuses any other
// field, so that a field laxity should not send fails the test.
type StartJobRunRequest struct {
	Name             string            `json:"name"`
	ClientToken      string            `json:"clientToken"`
	ExecutionRoleArn string            `json:"executionRoleArn"`
	ReleaseLabel     string            `json:"releaseLabel"`
	JobDriver        JobDriver         `json:"jobDriver"`
	Tags             map[string]string `json:"tags,omitempty"`
}

// JobDriver is StartJobRun's jobDriver; only Spark submit drivers are
// accepted, as laxity sends no other.
type JobDriver struct {
	SparkSubmitJobDriver *SparkSubmitJobDriver `json:"sparkSubmitJobDriver,omitempty"`
}

// SparkSubmitJobDriver is the jobDriver's sparkSubmitJobDriver.
type SparkSubmitJobDriver struct {
	EntryPoint            string   `json:"entryPoint"`
	EntryPointArguments   []string `json:"entryPointArguments,omitempty"`
	SparkSubmitParameters string   `json:"sparkSubmitParameters,omitempty"`
}

// UpdateNodegroupConfigRequest is UpdateNodegroupConfig's JSON body; the
// fake refuses any other field, such as labels or taints, which laxity must
// leave to the node group's owner.
type UpdateNodegroupConfigRequest struct {
	ClientRequestToken string         `json:"clientRequestToken"`
	ScalingConfig      *ScalingConfig `json:"scalingConfig"`
}

// ScalingConfig is a node group's scaling configuration, as
// UpdateNodegroupConfig takes it and DescribeNodegroup returns it.
type ScalingConfig struct {
	MinSize     *int32 `json:"minSize,omitempty"`
	MaxSize     *int32 `json:"maxSize,omitempty"`
	DesiredSize *int32 `json:"desiredSize,omitempty"`
}

// TB is what the fake needs of a test: testing.TB's methods it calls, so
// that Ginkgo's GinkgoT() serves as well as a *testing.T.
type TB interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// New starts a fake, closed when the test ends. Its node group has the
// bounds [0, 20] and the desired size 2. Unexpected requests fail t.
func New(t TB) *Server {
	t.Helper()
	f := &Server{
		t:             t,
		byToken:       map[string]*Run{},
		pageSize:      2,
		scaling:       ScalingConfig{MinSize: aws.Int32(0), MaxSize: aws.Int32(20), DesiredSize: aws.Int32(2)},
		updateByToken: map[string]string{},
		calls:         map[string]int{},
		faults:        map[string][]fault{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /virtualclusters/{vc}/jobruns", f.serve(OpStartJobRun, "emr-containers", f.startJobRun))
	mux.HandleFunc("GET /virtualclusters/{vc}/jobruns", f.serve(OpListJobRuns, "emr-containers", f.listJobRuns))
	mux.HandleFunc("GET /virtualclusters/{vc}/jobruns/{id}", f.serve(OpDescribeJobRun, "emr-containers", f.describeJobRun))
	mux.HandleFunc("DELETE /virtualclusters/{vc}/jobruns/{id}", f.serve(OpCancelJobRun, "emr-containers", f.cancelJobRun))
	mux.HandleFunc("GET /clusters/{cluster}/node-groups/{nodegroup}", f.serve(OpDescribeNodegroup, "eks", f.describeNodegroup))
	mux.HandleFunc("POST /clusters/{cluster}/node-groups/{nodegroup}/update-config", f.serve(OpUpdateNodegroupConfig, "eks", f.updateNodegroupConfig))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("fake AWS: unexpected request %s %s", r.Method, r.URL)
		writeError(w, http.StatusNotFound, "UnknownOperationException", "no such operation")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// URL is the fake's endpoint, for a Config's or a backend's Endpoint.
func (f *Server) URL() string {
	return f.url
}

// Config is a Config of the fake's virtual cluster and node group at its
// endpoint, so that a test needs no AWS names of its own.
func (f *Server) Config() emr.Config {
	return emr.Config{
		Region:           Region,
		Endpoint:         f.url,
		VirtualClusterID: VirtualClusterID,
		ExecutionRoleARN: ExecutionRoleARN,
		ReleaseLabel:     ReleaseLabel,
		ClusterName:      ClusterName,
		NodegroupName:    NodegroupName,
	}
}

// Credentials are the static credentials the fake accepts signatures of,
// so that a client never reaches for the SDK's default chain.
func (f *Server) Credentials() aws.CredentialsProvider {
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: AccessKeyID, SecretAccessKey: SecretAccessKey, Source: "emrfake"}, nil
	})
}

// SetClock dates job runs and updates by now, so that a story with a fake
// clock sees times consistent with it: a run is created at now() when
// StartJobRun creates it and finishes at now() when SetState ends it or
// CancelJobRun cancels it. Without a clock, runs are created a minute apart
// from a fixed epoch and finish 30 seconds after their creation.
func (f *Server) SetClock(now func() time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = now
}

// SetUpdatesCompleteAtOnce keeps, when on, an UpdateNodegroupConfig from
// leaving the node group updating, so that a controller resizing it again
// and again is not refused with ResourceInUseException until FinishUpdate.
func (f *Server) SetUpdatesCompleteAtOnce(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updatesCompleteAtOnce = on
}

// Fail makes the next times calls of op fail with the given status, AWS
// error code and message, after they are counted and their signatures
// checked.
func (f *Server) Fail(op string, times, status int, code, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[op] = append(f.faults[op], fault{times: times, status: status, code: code, message: message})
}

// CallCount is how many calls of op the fake has received, failed ones
// included, so that a test can see retries.
func (f *Server) CallCount(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// SetState moves a job run to state, as EMR on EKS would while it runs; a
// terminal state (COMPLETED, FAILED, CANCELLED) also sets its finishedAt.
// An unknown id fails the test.
func (f *Server) SetState(id, state, details, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, run := range f.runs {
		if run.ID != id {
			continue
		}
		run.State, run.StateDetails, run.FailureReason = state, details, reason
		switch state {
		case emr.StateCompleted, emr.StateFailed, emr.StateCancelled:
			finished := run.CreatedAt.Add(30 * time.Second)
			if f.now != nil {
				finished = f.now()
			}
			run.FinishedAt = &finished
		}
		return
	}
	f.t.Fatalf("fake AWS: no job run %s", id)
}

// RunCount is how many job runs have been started.
func (f *Server) RunCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.runs)
}

// Runs is a copy of every job run, in creation order, for a test to check
// what a controller started.
func (f *Server) Runs() []Run {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Run, 0, len(f.runs))
	for _, run := range f.runs {
		c := *run
		if run.FinishedAt != nil {
			finished := *run.FinishedAt
			c.FinishedAt = &finished
		}
		out = append(out, c)
	}
	return out
}

// LastStart is the body of the last StartJobRun call that got past the
// faults; it fails the test if there was none.
func (f *Server) LastStart() StartJobRunRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.starts) == 0 {
		f.t.Fatal("fake AWS: no StartJobRun received")
	}
	return f.starts[len(f.starts)-1]
}

// LastUpdate is the body of the last UpdateNodegroupConfig call that got
// past the faults; it fails the test if there was none.
func (f *Server) LastUpdate() UpdateNodegroupConfigRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.updates) == 0 {
		f.t.Fatal("fake AWS: no UpdateNodegroupConfig received")
	}
	return f.updates[len(f.updates)-1]
}

// Updates is every UpdateNodegroupConfig call that got past the faults, in
// order, refused ones included, for a test to follow the resizes.
func (f *Server) Updates() []Update {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Update(nil), f.updateLog...)
}

// FinishUpdate ends the node group's update in progress, as EKS does
// minutes after it starts.
func (f *Server) FinishUpdate() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updating = false
}

// SetMinSize changes the node group's minimum size, as its owner might.
func (f *Server) SetMinSize(n int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scaling.MinSize = &n
}

// SetScaling sets the node group's bounds and desired size, as its owner
// might, so that a story starts from the group it needs.
func (f *Server) SetScaling(minSize, maxSize, desired int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scaling = ScalingConfig{MinSize: &minSize, MaxSize: &maxSize, DesiredSize: &desired}
}

// DesiredSize is the node group's desired size.
func (f *Server) DesiredSize() int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.scaling.DesiredSize
}

// serve counts a call of op, checks its signature for service, applies the
// next fault queued for op, and otherwise hands the call to h.
func (f *Server) serve(op, service string, h func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
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

var signedHeadersPattern = regexp.MustCompile(`SignedHeaders=([^,]+)`)

// checkSignature recomputes the request's SigV4 signature with the fake's
// credentials from the headers it says it signed, and compares it with the
// one it carries.
func checkSignature(r *http.Request, body []byte, service string) error {
	auth := r.Header.Get("Authorization")
	scope := fmt.Sprintf("/%s/%s/aws4_request", Region, service)
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential="+AccessKeyID+"/") || !strings.Contains(auth, scope) {
		return fmt.Errorf("authorization %q is not a SigV4 signature of %s for %s in %s", auth, AccessKeyID, service, Region)
	}
	signedAt, err := time.Parse(amzDateLayout, r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("X-Amz-Date: %w", err)
	}
	signedHeaders := signedHeadersPattern.FindStringSubmatch(auth)
	if signedHeaders == nil {
		return fmt.Errorf("authorization %q names no signed headers", auth)
	}
	again, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
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
	creds := aws.Credentials{AccessKeyID: AccessKeyID, SecretAccessKey: SecretAccessKey}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, again, hex.EncodeToString(hash[:]), service, Region, signedAt); err != nil {
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
func (f *Server) decodeStrict(w http.ResponseWriter, op string, body []byte, v any) bool {
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

func (f *Server) startJobRun(w http.ResponseWriter, r *http.Request, body []byte) {
	if !f.virtualCluster(w, r) {
		return
	}
	var req StartJobRunRequest
	if !f.decodeStrict(w, OpStartJobRun, body, &req) {
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
		created := fakeEpoch.Add(time.Duration(len(f.runs)) * time.Minute)
		if f.now != nil {
			created = f.now()
		}
		run = &Run{
			ID:          fmt.Sprintf("%019d", len(f.runs)+1),
			Name:        req.Name,
			ClientToken: req.ClientToken,
			Request:     req,
			State:       emr.StatePending,
			CreatedAt:   created,
		}
		f.runs = append(f.runs, run)
		f.byToken[req.ClientToken] = run
	}
	writeJSON(w, http.StatusOK, map[string]string{
		"id": run.ID, "name": run.Name, "arn": runARN(run.ID), "virtualClusterId": VirtualClusterID,
	})
}

func (f *Server) describeJobRun(w http.ResponseWriter, r *http.Request, _ []byte) {
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
func (f *Server) listJobRuns(w http.ResponseWriter, r *http.Request, _ []byte) {
	if !f.virtualCluster(w, r) {
		return
	}
	q := r.URL.Query()
	var matching []*Run
	for _, run := range f.runs {
		if strings.HasPrefix(run.Name, q.Get("name")) {
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
		if from, err = strconv.Atoi(strings.TrimPrefix(token, "page-")); err != nil || from < 0 || from > len(matching) {
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

func (f *Server) cancelJobRun(w http.ResponseWriter, r *http.Request, _ []byte) {
	if !f.virtualCluster(w, r) {
		return
	}
	run := f.run(w, r.PathValue("id"))
	if run == nil {
		return
	}
	switch run.State {
	case emr.StateCompleted, emr.StateFailed, emr.StateCancelled, emr.StateCancelPending:
		writeError(w, http.StatusBadRequest, "ValidationException",
			fmt.Sprintf("Job run %s is in state %s and cannot be cancelled.", run.ID, run.State))
		return
	}
	run.State = emr.StateCancelPending
	if f.now != nil {
		finished := f.now()
		run.FinishedAt = &finished
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": run.ID, "virtualClusterId": VirtualClusterID})
}

// virtualCluster checks the request's virtual cluster, answering
// ResourceNotFoundException for any other.
func (f *Server) virtualCluster(w http.ResponseWriter, r *http.Request) bool {
	if vc := r.PathValue("vc"); vc != VirtualClusterID {
		writeError(w, http.StatusNotFound, "ResourceNotFoundException", fmt.Sprintf("Virtual cluster %s doesn't exist.", vc))
		return false
	}
	return true
}

// run is the job run with the given ID, or nil after answering
// ResourceNotFoundException.
func (f *Server) run(w http.ResponseWriter, id string) *Run {
	for _, run := range f.runs {
		if run.ID == id {
			return run
		}
	}
	writeError(w, http.StatusNotFound, "ResourceNotFoundException", fmt.Sprintf("Job run %s doesn't exist.", id))
	return nil
}

func runARN(id string) string {
	return fmt.Sprintf("arn:aws:emr-containers:%s:123456789012:/virtualclusters/%s/jobruns/%s", Region, VirtualClusterID, id)
}

// runJSON is a JobRun as DescribeJobRun and ListJobRuns return it.
func runJSON(run *Run) map[string]any {
	out := map[string]any{
		"id":               run.ID,
		"name":             run.Name,
		"arn":              runARN(run.ID),
		"virtualClusterId": VirtualClusterID,
		"clientToken":      run.ClientToken,
		"executionRoleArn": run.Request.ExecutionRoleArn,
		"releaseLabel":     run.Request.ReleaseLabel,
		"jobDriver":        run.Request.JobDriver,
		"state":            run.State,
		"createdAt":        run.CreatedAt.UTC().Format(timeLayout),
		"createdBy":        "arn:aws:sts::123456789012:assumed-role/laxity/operator",
		"tags":             run.Request.Tags,
	}
	if run.FinishedAt != nil {
		out["finishedAt"] = run.FinishedAt.UTC().Format(timeLayout)
	}
	if run.StateDetails != "" {
		out["stateDetails"] = run.StateDetails
	}
	if run.FailureReason != "" {
		out["failureReason"] = run.FailureReason
	}
	return out
}

func (f *Server) describeNodegroup(w http.ResponseWriter, r *http.Request, _ []byte) {
	if !f.nodegroup(w, r) {
		return
	}
	status := "ACTIVE"
	if f.updating {
		status = "UPDATING"
	}
	writeJSON(w, http.StatusOK, map[string]any{"nodegroup": map[string]any{
		"nodegroupName": NodegroupName,
		"clusterName":   ClusterName,
		"status":        status,
		"scalingConfig": f.scaling,
	}})
}

func (f *Server) updateNodegroupConfig(w http.ResponseWriter, r *http.Request, body []byte) {
	if !f.nodegroup(w, r) {
		return
	}
	var req UpdateNodegroupConfigRequest
	if !f.decodeStrict(w, OpUpdateNodegroupConfig, body, &req) {
		return
	}
	f.updates = append(f.updates, req)
	f.updateLog = append(f.updateLog, f.logged(req))
	if id, ok := f.updateByToken[req.ClientRequestToken]; ok && req.ClientRequestToken != "" {
		writeJSON(w, http.StatusOK, updateJSON(id))
		return
	}
	if f.updating {
		writeError(w, http.StatusConflict, "ResourceInUseException",
			fmt.Sprintf("Nodegroup %s cannot be updated as it is currently not in Active State", NodegroupName))
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
	f.updating = !f.updatesCompleteAtOnce
	id := fmt.Sprintf("update-%d", len(f.updateByToken)+1)
	f.updateByToken[req.ClientRequestToken] = id
	writeJSON(w, http.StatusOK, updateJSON(id))
}

// logged is req as Updates reports it, dated by the clock if there is one.
func (f *Server) logged(req UpdateNodegroupConfigRequest) Update {
	var u Update
	if f.now != nil {
		u.At = f.now()
	}
	if s := req.ScalingConfig; s != nil {
		u.DesiredSize = aws.ToInt32(s.DesiredSize)
		u.MinSize = aws.ToInt32(s.MinSize)
		u.MaxSize = aws.ToInt32(s.MaxSize)
	}
	return u
}

// nodegroup checks the request's cluster and node group, answering
// ResourceNotFoundException for any other.
func (f *Server) nodegroup(w http.ResponseWriter, r *http.Request) bool {
	if r.PathValue("cluster") != ClusterName || r.PathValue("nodegroup") != NodegroupName {
		writeError(w, http.StatusNotFound, "ResourceNotFoundException",
			fmt.Sprintf("No node group found for name: %s.", r.PathValue("nodegroup")))
		return false
	}
	return true
}

func updateJSON(id string) map[string]any {
	return map[string]any{"update": map[string]any{"id": id, "status": "InProgress", "type": "ConfigUpdate"}}
}
