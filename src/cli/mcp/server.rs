//! The MCP server: the handler rmcp calls for each request (tools,
//! resources), served over this process's stdin and stdout.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};

/// What the server tells a client it is for.
const INSTRUCTIONS: &str = "Galapagos runs LLM-driven program search: a card (the search method) on a task \
    folder (a program, an evaluator scoring it). list_tasks and list_cards show what there is; start_run starts a \
    detached run and returns its folder; run_status watches it; steer_run adds notes, pins, pauses or stops it; \
    get_genome reads the best program; apply_genome writes it into a folder. The resource galapagos://skill is the \
    whole guide.";

/// The handler: it holds nothing; each call reads what it needs.
#[derive(Clone, Copy, Debug, Default)]
struct Galapagos;

impl ServerHandler for Galapagos {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("galapagos", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(super::tools::list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(super::tools::call(&request.name, request.arguments)
            .await
            .into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(
            super::resources::list().await,
        ))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(
            super::resources::templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        match super::resources::read(&request.uri).await {
            Ok(contents) => Ok(ReadResourceResult::new(vec![contents]).into()),
            Err(why) => Err(ErrorData::resource_not_found(why, None)),
        }
    }
}

/// Serve until the client closes stdin.
pub(super) async fn serve_stdio() -> Result<(), String> {
    let service = Galapagos
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("cannot start: {e}"))?;
    service
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}
