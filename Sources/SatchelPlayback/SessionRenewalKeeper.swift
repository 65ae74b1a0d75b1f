/// Keeps one protected session's license renewed while it is open (the FairPlay Streaming Programming Guide, Table
/// 5-2):
/// asks its rights source every few seconds whether a renewal is due and renews it in the background, before the
/// license lapses; a renewal the license server refuses cuts the session (`cut`, with the reason).
struct SessionRenewalKeeper: Sendable {
    let task: Task<Void, Never>

    /// How often a session asks whether its renewal is due.
    static let interval: Duration = .seconds(2)

    /// Starts keeping `asset`'s license renewed through `rights`.
    init(asset: String, rights: any PlaybackRights, interval: Duration = Self.interval, cut: @escaping @Sendable (String) async -> Void) {
        task = Task {
            while !Task.isCancelled {
                do { try await Task.sleep(for: interval) } catch { break }
                do throws(PlaybackError) {
                    _ = try await rights.renewIfDue(asset: asset)
                } catch {
                    await cut("the license server refused to renew the license: \(error.description)")
                    break
                }
            }
        }
    }

    /// Stops renewing.
    func end() async {
        task.cancel()
        await task.value
    }
}
