// Package v20170312 has the few names flannel's tencentvpc backend uses;
// every call fails: the lab's flanneld runs the vxlan backend.
package v20170312

import "errors"

var errStub = errors.New("tencentvpc: not in gpukit's lab build of flanneld")

type Client struct{}

func NewClientWithSecretId(secretID, secretKey, region string) (*Client, error) {
	return nil, errStub
}

type Filter struct {
	Name   *string
	Values []*string
}

type Route struct {
	DestinationCidrBlock, GatewayType, GatewayId, RouteType *string
	RouteId                                                 *uint64
	Enabled                                                 *bool
}

type RouteTable struct {
	RouteTableId *string
	RouteSet     []*Route
}

type DescribeRouteTablesRequest struct{ Filters []*Filter }

type DescribeRouteTablesResponse struct {
	Response *struct{ RouteTableSet []*RouteTable }
}

type DeleteRoutesRequest struct {
	RouteTableId *string
	Routes       []*Route
}

type DeleteRoutesResponse struct{}

type CreateRoutesRequest struct {
	RouteTableId *string
	Routes       []*Route
}

type CreateRoutesResponse struct{}

func NewDescribeRouteTablesRequest() *DescribeRouteTablesRequest {
	return &DescribeRouteTablesRequest{}
}
func NewDeleteRoutesRequest() *DeleteRoutesRequest { return &DeleteRoutesRequest{} }
func NewCreateRoutesRequest() *CreateRoutesRequest { return &CreateRoutesRequest{} }

func (*Client) DescribeRouteTables(*DescribeRouteTablesRequest) (*DescribeRouteTablesResponse, error) {
	return nil, errStub
}
func (*Client) DeleteRoutes(*DeleteRoutesRequest) (*DeleteRoutesResponse, error) { return nil, errStub }
func (*Client) CreateRoutes(*CreateRoutesRequest) (*CreateRoutesResponse, error) { return nil, errStub }
