// AWS's DynamoDB Local on a loopback-only Jetty connector.
//
// DynamoDB Local's own entry point (ServerRunner / DynamoDBProxyServer) has no host option:
// its Jetty server binds every interface, and it sends start-up telemetry unless told not to.
// dlpipe's servers bind 127.0.0.1 only, so this launcher builds the same request handler
// (LocalDynamoDBRequestHandler behind LocalDynamoDBServerHandler, in the context collection
// DynamoDBProxyServer.setUpHandler would build) and serves it on a connector bound to the
// given host. ServerRunner.setUpTelemetry is never called, so no telemetry is sent.
//
// Usage: DlpipeDynamoDBLocal HOST PORT   (PORT 0 picks a free port)
// Prints "dlpipe-dynamodb-local listening on port N" once the connector is open.

import com.amazonaws.services.dynamodbv2.local.server.LocalDynamoDBRequestHandler;
import com.amazonaws.services.dynamodbv2.local.server.LocalDynamoDBServerHandler;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.ContextHandler;
import org.eclipse.jetty.server.handler.ContextHandlerCollection;

public final class DlpipeDynamoDBLocal {
    private DlpipeDynamoDBLocal() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: DlpipeDynamoDBLocal HOST PORT");
            System.exit(2);
        }
        String host = args[0];
        int port = Integer.parseInt(args[1]);

        // In memory, one database for every access key and region (-inMemory -sharedDb),
        // no artificial delay on CREATING/UPDATING table statuses.
        LocalDynamoDBRequestHandler requests =
                new LocalDynamoDBRequestHandler(0, true, null, true, false);
        LocalDynamoDBServerHandler handler = new LocalDynamoDBServerHandler(requests, null);

        Server server = new Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setHost(host);
        connector.setPort(port);
        server.addConnector(connector);

        ContextHandler context = new ContextHandler();
        context.setHandler(handler);
        ContextHandlerCollection contexts = new ContextHandlerCollection();
        contexts.addHandler(context);
        server.setHandler(contexts);
        server.setStopAtShutdown(true);
        try {
            server.start();
        } catch (Exception e) {
            // Jetty's non-daemon threads would keep a JVM that failed to bind alive forever.
            System.out.println("dlpipe-dynamodb-local failed: " + e);
            System.out.flush();
            System.exit(1);
        }

        System.out.println("dlpipe-dynamodb-local listening on port " + connector.getLocalPort());
        System.out.flush();
        server.join();
    }
}
