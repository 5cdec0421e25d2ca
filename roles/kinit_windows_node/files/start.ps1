<#
.SYNOPSIS
    Joins this Windows Server 2022 host to a kinit Kubernetes cluster as a worker.

.DESCRIPTION
    kinit's own take on the start.ps1 of the Windows flannel guides (Microsoft/SDN, seed 003),
    using the current pieces: containerd, the Kubernetes Windows binaries from dl.k8s.io,
    flanneld, the flannel CNI plugin delegating to sdnbridge (host-gw) or sdnoverlay (vxlan),
    and `kubeadm join`. kubelet, flanneld and kube-proxy run as Windows services (nssm).

    kinit has already, before this script runs:
      - installed the Containers feature and rebooted;
      - written C:\etc\kube-flannel\net-conf.json and C:\etc\cni\net.d\10-flannel.conf from
        the same variables as the Linux side;
      - written the kubeadm JoinConfiguration (-JoinConfig) when the node has not joined, and
        kubeconfigs for the kube-proxy and flannel service accounts.

    Idempotent: every step checks before it changes anything. The last line of output is
    KINIT_CHANGED=True or KINIT_CHANGED=False.

    Every download is checked against its SHA-256 before it is used (Get-Download): the digest
    file the release publishes beside it (containerd, dl.k8s.io, CNI plugins), or the digest
    kinit pins for those that publish none (-FlanneldSha256, -FlannelCniSha256,
    -WindowsCniSha256, -NssmSha256). `unpinned` for -FlanneldSha256/-FlannelCniSha256 takes
    the file unverified (nothing publishes their digest) and logs the digest it got.
#>
[CmdletBinding()]
param(
    [Parameter(Mandatory = $true)][string]$ManagementIP,
    [string]$ClusterCIDR = "10.244.0.0/16",
    [string]$ServiceCIDR = "10.96.0.0/12",
    [string]$KubeDnsServiceIP = "10.96.0.10",
    [ValidateSet("l2bridge", "overlay")][string]$NetworkMode = "l2bridge",
    [Parameter(Mandatory = $true)][string]$KubernetesVersion,
    [string]$NodeName = ([System.Net.Dns]::GetHostEntry("").HostName.ToLower()),
    [string]$ContainerdVersion = "2.1.4",
    [string]$FlannelVersion = "v0.27.4",
    [string]$FlannelCniVersion = "v1.7.1-flannel2",
    [string]$WindowsCniVersion = "v0.3.1",
    [string]$CniPluginsVersion = "v1.6.2",
    [string]$PauseImage = "registry.k8s.io/pause:3.10",
    [string]$NssmUrl = "https://k8stestinfrabinaries.blob.core.windows.net/nssm-mirror/nssm-2.24.zip",
    [Parameter(Mandatory = $true)][string]$NssmSha256,
    [Parameter(Mandatory = $true)][string]$WindowsCniSha256,
    [Parameter(Mandatory = $true)][string]$FlanneldSha256,
    [Parameter(Mandatory = $true)][string]$FlannelCniSha256,
    [string]$KubeDir = "C:\k",
    [string]$JoinConfig = "",
    # The MTU of the management interface (0: leave it). On OVN the path is 1442 bytes and the
    # emulated NIC does not learn it (see kinit-mtu.ps1 on the config ISO); once the Hyper-V
    # switch exists the address sits on a new vEthernet adapter, which needs it again.
    [int]$Mtu = 0,
    [int]$WaitSeconds = 600
)

$ErrorActionPreference = "Stop"
$ProgressPreference = "SilentlyContinue"
$script:Changed = $false

$CniBinDir = "C:\opt\cni\bin"
$CniConfDir = "C:\etc\cni\net.d"
$FlannelConfDir = "C:\etc\kube-flannel"
$DownloadDir = Join-Path $KubeDir "downloads"
$ContainerdDir = Join-Path $env:ProgramFiles "containerd"
$Nssm = Join-Path $KubeDir "nssm.exe"
if (-not $JoinConfig) { $JoinConfig = Join-Path $KubeDir "kubeadm-join.yaml" }
$KubeletConf = "C:\etc\kubernetes\kubelet.conf"

function Write-Step([string]$Message) {
    Write-Output "kinit: $Message"
}

function Set-Changed {
    $script:Changed = $true
}

# Every native program this script runs (containerd, tar, nssm, kubeadm, kubectl, host-local)
# goes through Invoke-Native; tests/integration/cluster_content/native_commands.rs checks that
# no other call of an external program is left in the script.
#
# Why: Server 2022 runs this script in Windows PowerShell 5.1. There, once a native program's
# stderr is redirected (2>&1, 2>$null, or captured by the host), each stderr line becomes an
# ErrorRecord to which $ErrorActionPreference applies, so under "Stop" the first warning that
# kubeadm or kubectl prints (or kubectl's "NotFound" while the node registers) ends the script.
# Microsoft documents this as the behaviour PowerShell 7.2 changed: "Error records redirected
# from native commands, like when using redirection operators (2>&1), aren't written to
# PowerShell's $Error variable and the preference variable $ErrorActionPreference doesn't
# affect the redirected output" (Microsoft Learn, "Running commands in the shell", Handling
# output and errors; the PSNotApplyErrorActionToStderr feature in "Using experimental
# features in PowerShell"; PowerShell/PowerShell#13361). 5.1 keeps the old behaviour.
#
# So the preference is "Continue" in this function's own scope only, stderr is collected
# apart from stdout, and success is decided by the exit code alone: a code other than 0
# throws with the program's output, unless the caller passes -AllowFailure and looks at
# ExitCode itself.
function Invoke-Native {
    param(
        [Parameter(Mandatory = $true)][string]$FilePath,
        [string[]]$ArgumentList = @(),
        [string]$InputText,
        [switch]$AllowFailure
    )
    $ErrorActionPreference = "Continue"
    # A program that cannot be started leaves no exit code: $null fails the check below.
    $global:LASTEXITCODE = $null
    if ($PSBoundParameters.ContainsKey("InputText")) {
        $records = $InputText | & $FilePath @ArgumentList 2>&1
    } else {
        $records = & $FilePath @ArgumentList 2>&1
    }
    $exitCode = $global:LASTEXITCODE
    $output = @($records | Where-Object { $_ -isnot [System.Management.Automation.ErrorRecord] } | ForEach-Object { "$_" })
    $errorOutput = @($records | Where-Object { $_ -is [System.Management.Automation.ErrorRecord] } | ForEach-Object { "$_" })
    if ($exitCode -ne 0 -and -not $AllowFailure) {
        $text = ($output + $errorOutput) -join "`n"
        throw "$FilePath $($ArgumentList -join ' ') failed with exit code ${exitCode}: $text"
    }
    [pscustomobject]@{ ExitCode = $exitCode; Output = $output; ErrorOutput = $errorOutput }
}

# The SHA-256 a release publishes in a file beside an asset (dl.k8s.io's `<file>.sha256`, a
# bare digest; containerd's `.sha256sum` and the CNI plugins' `.sha256`, `<digest>  <name>`).
function Get-PublishedSha256([string]$Url) {
    $content = (Invoke-WebRequest -UseBasicParsing -Uri $Url).Content
    if ($content -is [byte[]]) {
        $content = [System.Text.Encoding]::ASCII.GetString($content)
    }
    $digest = ("$content".Trim() -split "\s+")[0]
    if ($digest -notmatch "^[0-9a-fA-F]{64}$") {
        throw "no SHA-256 digest in $Url"
    }
    return $digest
}

# Download once, into place only after its SHA-256 matched (a file already in place got
# there that way and is kept). -Sha256 is the digest (64 hex digits) or the URL of the digest
# file the release publishes, read only when the download happens.
function Get-Download {
    param(
        [Parameter(Mandatory = $true)][string]$Url,
        [Parameter(Mandatory = $true)][string]$Destination,
        [Parameter(Mandatory = $true)][string]$Sha256
    )
    if (Test-Path $Destination) {
        return $false
    }
    $expected = $Sha256
    # `unpinned`: no digest exists for this download (the role warned about it).
    $pinned = $expected -ne "unpinned"
    if ($expected -match "^https?://") {
        $expected = Get-PublishedSha256 $expected
    }
    if ($pinned -and $expected -notmatch "^[0-9a-fA-F]{64}$") {
        throw "the SHA-256 given for $Url is not 64 hex digits: '$Sha256'"
    }
    New-Item -ItemType Directory -Force -Path (Split-Path $Destination) | Out-Null
    Write-Step "downloading $Url"
    $partial = "$Destination.partial"
    Invoke-WebRequest -UseBasicParsing -Uri $Url -OutFile $partial
    $actual = (Get-FileHash -Algorithm SHA256 -LiteralPath $partial).Hash.ToLowerInvariant()
    if (-not $pinned) {
        Write-Step "$Url is not pinned; its SHA-256 is $actual"
    } elseif ($actual -ne $expected.ToLowerInvariant()) {
        Remove-Item -Force -LiteralPath $partial
        throw "checksum of $Url is $actual, expected $($expected.ToLowerInvariant())"
    }
    Move-Item -Force $partial $Destination
    Set-Changed
    return $true
}

# An HNS network from its settings (the HNS v1 JSON schema), through the HNS API that
# vmcompute.dll exports as HNSCall: Windows' own HostNetworkingService module only reads and
# removes networks (Get-HnsNetwork, Remove-HnsNetwork); creating one is what microsoft/SDN's
# Kubernetes/windows/hns.psm1 (New-HnsNetwork, Invoke-HnsRequest) does through that call.
function Add-HnsNetwork([string]$Name, [string]$Type, [string]$AdapterName, [hashtable]$Subnet) {
    if (-not ("Kinit.HnsApi" -as [type])) {
        Add-Type -Namespace Kinit -Name HnsApi -MemberDefinition @"
[DllImport("vmcompute.dll")]
public static extern void HNSCall([MarshalAs(UnmanagedType.LPWStr)] string method, [MarshalAs(UnmanagedType.LPWStr)] string path, [MarshalAs(UnmanagedType.LPWStr)] string request, [MarshalAs(UnmanagedType.LPWStr)] out string response);
"@
    }
    $request = @{ Name = $Name; Type = $Type; NetworkAdapterName = $AdapterName; Subnets = @($Subnet) } | ConvertTo-Json -Depth 8
    $response = ""
    [Kinit.HnsApi]::HNSCall("POST", "/networks", $request, [ref]$response)
    $answer = $response | ConvertFrom-Json
    if (-not $answer.Success) {
        throw "HNS did not create network ${Name}: $($answer.Error)"
    }
}

# The management interface: the one holding -ManagementIP (the NIC, or the vEthernet
# adapter once the Hyper-V switch exists).
function Get-ManagementInterface {
    $index = (Get-NetIPAddress -IPAddress $ManagementIP -AddressFamily IPv4).InterfaceIndex
    Get-NetIPInterface -InterfaceIndex $index -AddressFamily IPv4
}

function Wait-Until([scriptblock]$Condition, [string]$What) {
    $deadline = (Get-Date).AddSeconds($WaitSeconds)
    while (-not (& $Condition)) {
        if ((Get-Date) -gt $deadline) {
            throw "timed out after $WaitSeconds s waiting for $What"
        }
        Start-Sleep -Seconds 5
    }
}

function Start-ServiceIfStopped([string]$Name) {
    if ((Get-Service -Name $Name).Status -ne "Running") {
        Start-Service -Name $Name
        Set-Changed
    }
}

# An nssm service with exactly these settings, running unless -NoStart. Settings are
# rewritten (and a running service restarted) only when they differ from what is registered.
#
# The registered settings are read from the registry, where nssm keeps them
# (HKLM\SYSTEM\CurrentControlSet\Services\<name>\Parameters, NSSM_REGISTRY in nssm's
# registry.h), not from `nssm get`: nssm 2.24 writes its output as UTF-16, which Windows
# PowerShell decodes with the OEM code page, so that output never equals the wanted values and
# every run would rewrite the settings and restart the service (Ansible's win_nssm hit the same:
# ansible/ansible-modules-extras#2867).
function Set-NssmService([string]$Name, [string]$Program, [string[]]$Arguments, [string[]]$Environment, [string]$DependsOn, [switch]$NoStart) {
    $argumentLine = $Arguments -join " "
    $existing = Get-Service -Name $Name -ErrorAction SilentlyContinue
    if (-not $existing) {
        Write-Step "registering service $Name"
        $null = Invoke-Native -FilePath $Nssm -ArgumentList @("install", $Name, $Program)
        Set-Changed
    }
    $registered = Get-ItemProperty -Path "HKLM:\SYSTEM\CurrentControlSet\Services\$Name\Parameters" -ErrorAction SilentlyContinue
    $same = $existing -and $registered -and
        "$($registered.Application)" -eq $Program -and
        "$($registered.AppParameters)".Trim() -eq $argumentLine.Trim() -and
        (@($registered.AppEnvironmentExtra) -join "`n") -eq ($Environment -join "`n")
    if (-not $same) {
        $settings = @(
            @("Application", $Program),
            @("AppParameters", $argumentLine),
            @("AppDirectory", $KubeDir),
            @("AppStdout", (Join-Path $KubeDir "logs\$Name.log")),
            @("AppStderr", (Join-Path $KubeDir "logs\$Name.log")),
            @("AppRotateFiles", "1"),
            @("AppRotateBytes", "10485760"),
            @("Start", "SERVICE_AUTO_START")
        )
        if ($Environment.Count -gt 0) {
            $settings += , (@("AppEnvironmentExtra") + $Environment)
        }
        if ($DependsOn) {
            $settings += , @("DependOnService", $DependsOn)
        }
        foreach ($setting in $settings) {
            $null = Invoke-Native -FilePath $Nssm -ArgumentList (@("set", $Name) + $setting)
        }
        if ($existing -and (Get-Service -Name $Name).Status -eq "Running") {
            Restart-Service -Name $Name
        }
        Set-Changed
    }
    if (-not $NoStart) {
        Start-ServiceIfStopped $Name
    }
}

# 1. Prerequisites kinit handled before: the Containers feature and the shared configuration.
if ((Get-WindowsFeature -Name Containers).InstallState -ne "Installed") {
    throw "the Containers feature is not installed (kinit installs it and reboots before start.ps1)"
}
$netConfPath = Join-Path $FlannelConfDir "net-conf.json"
$netConf = Get-Content -Raw -Path $netConfPath | ConvertFrom-Json
$expectedBackend = @{ "l2bridge" = "host-gw"; "overlay" = "vxlan" }[$NetworkMode]
if ($netConf.Backend.Type -ne $expectedBackend) {
    throw "net-conf.json has backend '$($netConf.Backend.Type)' but -NetworkMode $NetworkMode needs '$expectedBackend'"
}
if ($netConf.Network -ne $ClusterCIDR) {
    throw "net-conf.json has network '$($netConf.Network)' but -ClusterCIDR is '$ClusterCIDR'"
}
if ($NetworkMode -eq "overlay") {
    # Windows overlay networking needs VNI 4096 and UDP 4789; flannel names the network after the VNI.
    if ($netConf.Backend.VNI -ne 4096 -or $netConf.Backend.Port -ne 4789) {
        throw "Windows overlay needs VNI 4096 and port 4789, net-conf.json has VNI $($netConf.Backend.VNI) port $($netConf.Backend.Port)"
    }
    $NetworkName = "flannel.$($netConf.Backend.VNI)"
} else {
    $NetworkName = "cbr0"
}
$cniConf = Get-Content -Raw -Path (Join-Path $CniConfDir "10-flannel.conf") | ConvertFrom-Json
if ($cniConf.name -ne $NetworkName) {
    throw "CNI configuration names network '$($cniConf.name)', flannel will create '$NetworkName'"
}
New-Item -ItemType Directory -Force -Path $DownloadDir, (Join-Path $KubeDir "logs"), $CniBinDir | Out-Null

# 2. containerd.
$containerdArchive = Join-Path $DownloadDir "containerd-$ContainerdVersion-windows-amd64.tar.gz"
$containerdUrl = "https://github.com/containerd/containerd/releases/download/v$ContainerdVersion/containerd-$ContainerdVersion-windows-amd64.tar.gz"
if (Get-Download $containerdUrl $containerdArchive -Sha256 "$containerdUrl.sha256sum") {
    New-Item -ItemType Directory -Force -Path $ContainerdDir | Out-Null
    $null = Invoke-Native -FilePath "tar.exe" -ArgumentList @("-xzf", $containerdArchive, "-C", $ContainerdDir, "--strip-components=1")
}
$containerdExe = Join-Path $ContainerdDir "containerd.exe"
$containerdConfig = Join-Path $ContainerdDir "config.toml"
if (-not (Test-Path $containerdConfig)) {
    $config = (Invoke-Native -FilePath $containerdExe -ArgumentList @("config", "default")).Output -join "`n"
    $config = $config -replace "(?m)^(\s*)sandbox(_image)? = .*$", "`$1sandbox`$2 = '$PauseImage'"
    $config = $config -replace "(?m)^(\s*)bin_dirs = .*$", "`$1bin_dirs = ['$($CniBinDir -replace '\\', '/')']"
    $config = $config -replace "(?m)^(\s*)bin_dir = .*$", "`$1bin_dir = '$($CniBinDir -replace '\\', '/')'"
    $config = $config -replace "(?m)^(\s*)conf_dir = .*$", "`$1conf_dir = '$($CniConfDir -replace '\\', '/')'"
    Set-Content -Path $containerdConfig -Value $config -Encoding ascii
    Set-Changed
}
if (-not (Get-Service -Name containerd -ErrorAction SilentlyContinue)) {
    $null = Invoke-Native -FilePath $containerdExe -ArgumentList @("--register-service", "--config", $containerdConfig)
    Set-Changed
}
Start-ServiceIfStopped "containerd"

# 3. Kubernetes binaries at the cluster's version (the same release as the Linux packages).
foreach ($binary in @("kubelet", "kubeadm", "kube-proxy", "kubectl")) {
    $target = Join-Path $KubeDir "$binary.exe"
    $versioned = Join-Path $DownloadDir "$binary-v$KubernetesVersion.exe"
    $url = "https://dl.k8s.io/v$KubernetesVersion/bin/windows/amd64/$binary.exe"
    if ((Get-Download $url $versioned -Sha256 "$url.sha256") -or -not (Test-Path $target)) {
        Copy-Item -Force $versioned $target
        Set-Changed
    }
}

# 4. flanneld and the CNI plugins.
$flanneldExe = Join-Path $KubeDir "flanneld.exe"
$flanneldVersioned = Join-Path $DownloadDir "flanneld-$FlannelVersion.exe"
if ((Get-Download "https://github.com/flannel-io/flannel/releases/download/$FlannelVersion/flanneld.exe" $flanneldVersioned -Sha256 $FlanneldSha256) -or -not (Test-Path $flanneldExe)) {
    Copy-Item -Force $flanneldVersioned $flanneldExe
    Set-Changed
}
$sdnArchive = Join-Path $DownloadDir "windows-container-networking-cni-amd64-$WindowsCniVersion.zip"
if (Get-Download "https://github.com/microsoft/windows-container-networking/releases/download/$WindowsCniVersion/windows-container-networking-cni-amd64-$WindowsCniVersion.zip" $sdnArchive -Sha256 $WindowsCniSha256) {
    Expand-Archive -Force -Path $sdnArchive -DestinationPath $CniBinDir
}
$flannelCniArchive = Join-Path $DownloadDir "cni-plugin-flannel-windows-amd64-$FlannelCniVersion.tgz"
if (Get-Download "https://github.com/flannel-io/cni-plugin/releases/download/$FlannelCniVersion/cni-plugin-flannel-windows-amd64-$FlannelCniVersion.tgz" $flannelCniArchive -Sha256 $FlannelCniSha256) {
    $null = Invoke-Native -FilePath "tar.exe" -ArgumentList @("-xzf", $flannelCniArchive, "-C", $CniBinDir)
    Move-Item -Force (Join-Path $CniBinDir "flannel-amd64.exe") (Join-Path $CniBinDir "flannel.exe")
}
$cniPluginsArchive = Join-Path $DownloadDir "cni-plugins-windows-amd64-$CniPluginsVersion.tgz"
$cniPluginsUrl = "https://github.com/containernetworking/plugins/releases/download/$CniPluginsVersion/cni-plugins-windows-amd64-$CniPluginsVersion.tgz"
if (Get-Download $cniPluginsUrl $cniPluginsArchive -Sha256 "$cniPluginsUrl.sha256") {
    $null = Invoke-Native -FilePath "tar.exe" -ArgumentList @("-xzf", $cniPluginsArchive, "-C", $CniBinDir)
}

# 5. nssm runs the node components as services.
$nssmArchive = Join-Path $DownloadDir "nssm-2.24.zip"
if ((Get-Download $NssmUrl $nssmArchive -Sha256 $NssmSha256) -or -not (Test-Path $Nssm)) {
    Expand-Archive -Force -Path $nssmArchive -DestinationPath $DownloadDir
    Copy-Item -Force (Join-Path $DownloadDir "nssm-2.24\win64\nssm.exe") $Nssm
    Set-Changed
}

# 6. kubelet: a wrapper reads the flags `kubeadm join` writes (node IP, taints, pause image).
New-Item -ItemType Directory -Force -Path "C:\var\lib\kubelet", "C:\var\log\kubelet", "C:\etc\kubernetes\pki" | Out-Null
$startKubelet = Join-Path $KubeDir "StartKubelet.ps1"
$startKubeletText = @"
`$flags = ""
if (Test-Path C:\var\lib\kubelet\kubeadm-flags.env) {
    `$flags = ((Get-Content -Raw C:\var\lib\kubelet\kubeadm-flags.env) -replace '^KUBELET_KUBEADM_ARGS=', '').Trim().Trim('"')
}
`$arguments = @(
    "--cert-dir=C:\var\lib\kubelet\pki",
    "--config=C:\var\lib\kubelet\config.yaml",
    "--bootstrap-kubeconfig=C:\etc\kubernetes\bootstrap-kubelet.conf",
    "--kubeconfig=C:\etc\kubernetes\kubelet.conf",
    "--hostname-override=$NodeName",
    "--container-runtime-endpoint=npipe:////./pipe/containerd-containerd",
    "--enable-debugging-handlers",
    "--cgroups-per-qos=false",
    "--enforce-node-allocatable=```"```"",
    "--resolv-conf=```"```""
)
Invoke-Expression "$KubeDir\kubelet.exe `$(`$arguments -join ' ') `$flags"
"@
if (-not (Test-Path $startKubelet) -or (Get-Content -Raw $startKubelet) -ne $startKubeletText) {
    Set-Content -Path $startKubelet -Value $startKubeletText -NoNewline -Encoding ascii
    Set-Changed
}
# kubelet's API (kubectl logs, exec, port-forward) listens on TCP 10250. Open it as upstream
# sig-windows-tools hostprocess/PrepareNode.ps1 (at 401ee6f, line 128) does, with
# `New-NetFirewallRule -Name kubelet -DisplayName 'kubelet' -Enabled True -Direction Inbound
# -Protocol TCP -Action Allow -LocalPort 10250`; once: the rule is found again by its name.
if (-not (Get-NetFirewallRule -Name "kubelet" -ErrorAction SilentlyContinue)) {
    Write-Step "opening TCP 10250 for kubelet"
    New-NetFirewallRule -Name "kubelet" -DisplayName "kubelet" -Enabled True -Direction Inbound -Protocol TCP -Action Allow -LocalPort 10250 | Out-Null
    Set-Changed
}
# Registered, not started: kubelet has no configuration before `kubeadm join` writes
# C:\var\lib\kubelet\config.yaml, and join's kubelet-start phase starts the service itself
# (kubeadm's Windows init system goes through the service manager). Upstream
# sig-windows-tools hostprocess/PrepareNode.ps1 (at 401ee6f, lines 113-126) likewise only runs
# `nssm install kubelet` and `nssm set kubelet ...` before the join, never starts it.
$powershellExe = Join-Path $PSHOME "powershell.exe"
Set-NssmService -Name "kubelet" -Program $powershellExe `
    -Arguments @("-ExecutionPolicy", "Bypass", "-NoProfile", "-File", $startKubelet) `
    -Environment @() -DependsOn "containerd" -NoStart

# 7. The Hyper-V switch, once, before kubelet runs. The first HNS network on a host creates
# the switch and moves the management address onto its vEthernet adapter, which drops the
# network for seconds (kinit runs this script detached from its WinRM connection for that
# reason). As
# microsoft/SDN's Kubernetes/windows/helper.psm1 CreateExternalNetwork (at 242fb0c, lines
# 96-117; helper.v2.psm1 303-327 with -AdapterName) does, a throwaway network named
# "External" on 192.168.255.0/30 (VSID 9999 for overlay) is made first - "Do this only once
# as it causes network blip" - so that flanneld creating or re-creating its own network later
# reuses the switch. For overlay the same function opens UDP 4789 for VXLAN.
if ($NetworkMode -eq "overlay" -and -not (Get-NetFirewallRule -Name "OverlayTraffic4789UDP" -ErrorAction SilentlyContinue)) {
    New-NetFirewallRule -Name "OverlayTraffic4789UDP" -DisplayName "Overlay Traffic 4789 UDP" -Enabled True -Direction Inbound -Protocol UDP -Action Allow -LocalPort 4789 | Out-Null
    Set-Changed
}
if (-not (Get-HnsNetwork | Where-Object { $_.Name -eq "External" })) {
    $adapter = (Get-ManagementInterface).InterfaceAlias
    Write-Step "creating the HNS network External on $adapter (the Hyper-V switch; the network drops for a moment)"
    $externalSubnet = @{ AddressPrefix = "192.168.255.0/30"; GatewayAddress = "192.168.255.1" }
    if ($NetworkMode -eq "overlay") {
        $externalSubnet.Policies = @(@{ Type = "VSID"; VSID = 9999 })
        Add-HnsNetwork -Name "External" -Type "Overlay" -AdapterName $adapter -Subnet $externalSubnet
    } else {
        Add-HnsNetwork -Name "External" -Type "L2Bridge" -AdapterName $adapter -Subnet $externalSubnet
    }
    Set-Changed
}
Wait-Until { Get-NetIPAddress -IPAddress $ManagementIP -AddressFamily IPv4 -ErrorAction SilentlyContinue } "$ManagementIP to be back on the vEthernet adapter"

# 8. kubeadm join, once.
if (-not (Test-Path $KubeletConf)) {
    if (-not (Test-Path $JoinConfig)) {
        throw "the node has not joined and there is no join configuration at $JoinConfig"
    }
    Write-Step "kubeadm join as $NodeName"
    $join = Invoke-Native -FilePath (Join-Path $KubeDir "kubeadm.exe") -ArgumentList @("join", "--config", $JoinConfig)
    $join.Output
    $join.ErrorOutput
    Set-Changed
}
# Joined from here on: kubelet runs (started by the join, or by this line on later runs).
Start-ServiceIfStopped "kubelet"
$kubectl = Join-Path $KubeDir "kubectl.exe"
Wait-Until {
    # Exit code 1 with "NotFound" on stderr until kubelet has registered the node.
    (Invoke-Native -FilePath $kubectl -ArgumentList @("--kubeconfig", $KubeletConf, "get", "node", $NodeName, "-o", "name") -AllowFailure).ExitCode -eq 0
} "node $NodeName to register"

# 9. flanneld: takes this node's pod subnet from the API and creates the HNS network.
Set-NssmService -Name "flanneld" -Program $flanneldExe `
    -Arguments @("--kubeconfig-file=$(Join-Path $KubeDir 'flanneld.kubeconfig')", "--iface=$ManagementIP", "--ip-masq=1", "--kube-subnet-mgr=1", "--net-config-path=$netConfPath") `
    -Environment @("NODE_NAME=$NodeName") -DependsOn "kubelet"
Wait-Until { Get-HnsNetwork | Where-Object { $_.Name -eq $NetworkName } } "flanneld to create the HNS network $NetworkName"

# 10. The MTU, on the adapter that holds the address now (the vEthernet adapter).
if ($Mtu -gt 0) {
    $interface = Get-ManagementInterface
    if ($interface.NlMtu -ne $Mtu) {
        Write-Step "MTU $Mtu on $($interface.InterfaceAlias)"
        Set-NetIPInterface -InterfaceIndex $interface.ifIndex -AddressFamily IPv4 -NlMtuBytes $Mtu
        Set-Changed
    }
}

# 11. kube-proxy on the flannel network.
$proxyArguments = @(
    "--hostname-override=$NodeName",
    "--kubeconfig=$(Join-Path $KubeDir 'kube-proxy.kubeconfig')",
    "--cluster-cidr=$ClusterCIDR",
    "--proxy-mode=kernelspace",
    "--network-name=$NetworkName",
    "--v=2"
)
if ($NetworkMode -eq "overlay") {
    # Overlay needs a source VIP from this node's pod subnet, allocated once by host-local.
    $sourceVipFile = Join-Path $KubeDir "sourceVip.txt"
    if (-not (Test-Path $sourceVipFile)) {
        $subnet = (Get-HnsNetwork | Where-Object { $_.Name -eq $NetworkName }).Subnets[0].AddressPrefix
        $ipam = @{
            cniVersion = "0.3.0"
            name       = $NetworkName
            ipam       = @{ type = "host-local"; ranges = @(, @(@{ subnet = $subnet })); dataDir = "C:\var\lib\cni\networks" }
        } | ConvertTo-Json -Depth 8
        $env:CNI_COMMAND = "ADD"
        $env:CNI_CONTAINERID = "kinit-source-vip"
        $env:CNI_NETNS = "none"
        $env:CNI_IFNAME = "none"
        $env:CNI_PATH = $CniBinDir
        $allocation = (Invoke-Native -FilePath (Join-Path $CniBinDir "host-local.exe") -InputText $ipam).Output -join "`n" | ConvertFrom-Json
        Set-Content -Path $sourceVipFile -Value ($allocation.ips[0].address -split "/")[0] -Encoding ascii
        Set-Changed
    }
    $sourceVip = (Get-Content -Raw $sourceVipFile).Trim()
    $proxyArguments += @("--source-vip=$sourceVip", "--enable-dsr=false")
}
Set-NssmService -Name "kube-proxy" -Program (Join-Path $KubeDir "kube-proxy.exe") `
    -Arguments $proxyArguments -Environment @("KUBE_NETWORK=$NetworkName") -DependsOn "flanneld"

Write-Step "node $NodeName joined: network $NetworkName ($NetworkMode), DNS $KubeDnsServiceIP, services $ServiceCIDR"
Write-Output "KINIT_CHANGED=$script:Changed"
# Reaching this line is success: an exit code a native program left behind must not become the
# exit code of the whole command (kinit's win_shell passes $LASTEXITCODE on).
exit 0
