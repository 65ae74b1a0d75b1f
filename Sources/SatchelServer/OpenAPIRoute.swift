import Hummingbird
import SatchelHTTP

/// `GET /openapi.json`: the OpenAPI 3.1 document of `satchel serve` (`Web/openapi.json`, kept beside the code it
/// describes; a test fails when a route and the document disagree). Readable from any origin, so that an API
/// browser elsewhere can load it.
struct OpenAPIRoute: RouteGroup {
    let document: WebAssets.File

    func register(on router: Router<SatchelRequestContext>) {
        router.get("/openapi.json") { request, _ in
            var response = WebAssets.response(document, request)
            response.headers[.accessControlAllowOrigin] = "*"
            return response
        }
    }
}
