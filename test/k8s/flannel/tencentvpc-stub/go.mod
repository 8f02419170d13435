// A stand-in for Tencent Cloud's VPC SDK, which the module proxy refuses:
// flanneld links every backend, and the lab runs only vxlan. Test tooling.
module github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc

go 1.26.6
