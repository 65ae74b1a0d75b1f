import Foundation
import Hummingbird
import NIOCore
import SatchelBackplane
import SatchelBytes
import SatchelHTTP
import SatchelLicensing
import SatchelRights

/// A device's subscriptions to feeds, signed like every backplane request: a POST's body
/// is a ``DeviceBodyEnvelope`` whose signed request carries the body's digest; a GET or DELETE carries its signed
/// request in the `Satchel-Device-Request` header.
///
/// - `POST /backplane/subscriptions`: subscribe to a feed (`{feedID, maxItems, autodelete}`); subscribing again
///   changes the quota settings.
/// - `GET /backplane/subscriptions`: the device's subscriptions.
/// - `DELETE /backplane/subscriptions/{feedId}`: unsubscribe.
/// - `POST /backplane/feeds/sync`: the items new to the device, feed by feed, after the last it applied
///   (`{applied: {feed: N}}`, kept); with `since` (and `allFeeds`), the items published since then, listed.
struct BackplaneSubscriptionRoutes: RouteGroup {
    let backplane: BackplaneService

    func register(on router: Router<SatchelRequestContext>) {
        router.post("/backplane/subscriptions") { request, _ in
            let (_, device, body) = try await BackplaneDeviceRoutes.signedBody(SubscriptionRequest.self, request, backplane: backplane)
            let subscription = try await backplane.feeds.subscribe(device: device.deviceID, body, at: backplane.now)
            backplane.hub.wake(subscriptionsOf: device.deviceID)
            return try Response.json(subscription)
        }
        router.get("/backplane/subscriptions") { request, _ in
            let device = try await signedHeader(request)
            return try Response.json(SubscriptionsAnswer(subscriptions: try await backplane.feeds.subscriptions(device: device.deviceID)))
        }
        router.delete("/backplane/subscriptions/{feedId}") { request, context in
            let device = try await signedHeader(request)
            try await backplane.feeds.unsubscribe(device: device.deviceID, feed: try context.parameters.require("feedId"))
            backplane.hub.wake(subscriptionsOf: device.deviceID)
            return Response(status: .noContent)
        }
        router.post("/backplane/feeds/sync") { request, _ in
            let (claims, device, body) = try await BackplaneDeviceRoutes.signedBody(SubscriptionSyncRequest.self, request, backplane: backplane)
            let checked = try body.validated()
            let feeds = try await backplane.feeds.deliver(device: device.deviceID, applied: checked.applied)
            var listing: [FeedItem]?
            if let since = checked.since { listing = try await backplane.feeds.listing(device: device.deviceID, since: since, allFeeds: checked.allFeeds) }
            return try await backplane.signed(SubscriptionSyncAnswer(feeds: feeds, listing: listing, serverTime: backplane.now), answering: claims)
        }
    }

    /// The device a GET or DELETE comes from (its signed request in the header).
    private func signedHeader(_ request: Request) async throws -> BackplaneDevice {
        guard let signed = request.headers[BackplaneDeviceRoutes.requestHeader], signed.utf8.count <= DeviceLicenseRoutes.maximumBody else {
            throw BackplaneError.badRequest("a device's GET or DELETE carries its signed request in the Satchel-Device-Request header")
        }
        return try await backplane.device(signed: signed, for: request).device
    }

    struct SubscriptionsAnswer: Codable {
        var subscriptions: [Subscription]
    }
}
