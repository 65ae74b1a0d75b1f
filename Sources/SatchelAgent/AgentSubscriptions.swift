import Foundation
import SatchelBackplane

/// The agent's side of feed subscriptions: subscribing and unsubscribing with the
/// backplane, and the sync that delivers the items new to the device. The feeds followed are kept in the sealed
/// backplane status, so a sync knows whether it has feeds to ask about. Runs on the agent's isolation.
enum AgentSubscriptions {
    static func subscribe(_ agent: isolated Agent, _ request: SubscriptionRequest) async throws(AgentError) -> Subscription {
        let server = try agent.device.registered().server
        let data = try await agent.requests.signedBody("/backplane/subscriptions", body: request, server: server, timeout: AgentBackplane.timeout)
        let subscription = try Agent.decode(Subscription.self, data, what: "the subscription")
        guard subscription.feedID == request.feedID else { throw .invalidAnswer("the subscription is for another feed") }
        try await keep(agent) { $0.insert(subscription.feedID) }
        return subscription
    }

    static func unsubscribe(_ agent: isolated Agent, feed: String) async throws(AgentError) {
        let server = try agent.device.registered().server
        let segment = feed.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-_."))) ?? feed
        do {
            _ = try await agent.requests.signedGet("/backplane/subscriptions/\(segment)", server: server, method: .DELETE, timeout: AgentBackplane.timeout)
        } catch where error.problemType == "not-subscribed" {
            try await keep(agent) { $0.remove(feed) }
            throw error
        }
        try await keep(agent) { $0.remove(feed) }
    }

    static func subscriptions(_ agent: isolated Agent) async throws(AgentError) -> [Subscription] {
        let server = try agent.device.registered().server
        let data = try await agent.requests.signedGet("/backplane/subscriptions", server: server, timeout: AgentBackplane.timeout)
        let subscriptions = try Agent.decode(SubscriptionsAnswer.self, data, what: "the subscriptions").subscriptions
        try await keep(agent) { $0 = Set(subscriptions.map(\.feedID)) }
        return subscriptions
    }

    static func sync(_ agent: isolated Agent, _ request: SubscriptionSyncRequest) async throws(AgentError) -> SubscriptionSyncAnswer {
        let server = try agent.device.registered().server
        let data = try await agent.requests.signedBody("/backplane/feeds/sync", body: request, server: server, timeout: AgentBackplane.timeout,
                                                  answer: .signed)
        let answer = try Agent.decode(SubscriptionSyncAnswer.self, data, what: "the subscriptions' sync")
        try await keep(agent) { $0 = Set(answer.feeds.map(\.subscription.feedID)) }
        return answer
    }

    /// Changes the feeds kept in the sealed status.
    private static func keep(_ agent: isolated Agent, _ change: @escaping @Sendable (inout Set<String>) -> Void) async throws(AgentError) {
        try await agent.store.change { (state, _) throws(AgentError) -> (Void, [LicenseStore.RowChange]) in
            var status = state.backplane ?? BackplaneStatus()
            var feeds = Set(status.feeds ?? [])
            change(&feeds)
            status.feeds = feeds.sorted()
            state.backplane = status
            return ((), [])
        }
    }

    struct SubscriptionsAnswer: Decodable {
        var subscriptions: [Subscription]
    }
}
